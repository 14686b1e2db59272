// The bot's own user id: from config, else asked of Slack (auth.test) once, and asked again after
// a failure rather than remembered as unknown.
import type { WebClient } from "@slack/web-api";
import type { Logger } from "pino";
import { slackErrorCode } from "./client.js";
import type { SlackConfig } from "./config.js";

export function slackBotUserIdLookup(config: SlackConfig, client: WebClient, logger: Logger): () => Promise<string | null> {
  let identity: Promise<string | null> | null = null;
  return (): Promise<string | null> => {
    if (config.botUserId) return Promise.resolve(config.botUserId);
    identity ??= client.auth.test().then(
      (result) => result.user_id ?? null,
      (error: unknown) => {
        identity = null; // try again next time
        logger.warn({ code: slackErrorCode(error) }, "slack auth.test failed; bot user id unknown");
        return null;
      },
    );
    return identity;
  };
}
