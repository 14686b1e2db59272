// How Slack's events reach the gateway: the Events API over signed HTTP routes (with a signing
// secret) and/or Socket Mode (with an app-level token). Both hand each event to the same intake.
import type { Logger } from "pino";
import type { GatewayIngress, PlatformAdapter } from "../../gateway/types.js";
import type { SlackConfig } from "./config.js";
import { headerRule, platformBodyLimit } from "../shared/request-rules.js";
import { headerValue } from "../shared/headers.js";
import { slackHeadersProblem } from "./signature.js";
import { createSlackIntake, type SlackIntakeContext } from "./intake.js";
import { slackRoutes } from "./routes.js";
import { createSocketEnvelopeHandler } from "./socket-envelopes.js";
import type { SlackSocketMode } from "./socket-mode.js";

export interface SlackTransportsDeps {
  intakeContext: SlackIntakeContext;
  /** Slack's Web API base URL, normalised (Socket Mode asks it for its WebSocket URL). */
  apiUrl: string;
  bodyLimitBytes: number;
  logger: Logger;
  now: () => number;
}

/** Slack's event and command payloads are tens of KB at most (a 40,000-character message and its blocks). */
const SLACK_MAX_BODY_BYTES = 512 * 1024;

export type SlackTransports = Pick<PlatformAdapter, "routes" | "requestRules" | "start" | "stop">;

export function slackTransports(config: SlackConfig, deps: SlackTransportsDeps): SlackTransports {
  const { intakeContext, apiUrl, logger, now } = deps;
  const signingSecret = config.signingSecret ?? null;
  const appToken = config.appToken ?? null;
  let socketMode: SlackSocketMode | null = null;
  const bodyLimitBytes = platformBodyLimit(deps.bodyLimitBytes, SLACK_MAX_BODY_BYTES);

  return {
    routes: signingSecret
      ? (ingress: GatewayIngress) =>
          slackRoutes({
            signingSecret,
            bodyLimitBytes,
            logger,
            now,
            intake: createSlackIntake(ingress, intakeContext),
          })
      : undefined,

    requestRules: signingSecret
      ? () =>
          ["/slack/events", "/slack/commands"].map((path) =>
            headerRule(path, bodyLimitBytes, "invalid_signature", (headers, nowMs) =>
              slackHeadersProblem({ timestamp: headerValue(headers, "x-slack-request-timestamp"), signature: headerValue(headers, "x-slack-signature") }, nowMs),
            ),
          )
      : undefined,

    // Socket Mode connects in the background and keeps reconnecting: Slack being unreachable
    // must not keep the gateway from starting. Its SDK (and the WebSocket client under it) is
    // loaded only here: a gateway on the Events API alone does not hold it in memory.
    start: appToken
      ? async (ingress: GatewayIngress) => {
          await socketMode?.stop();
          const { startSlackSocketMode } = await import("./socket-mode.js");
          socketMode = startSlackSocketMode({
            appToken,
            apiUrl,
            logger,
            onEnvelope: createSocketEnvelopeHandler(createSlackIntake(ingress, intakeContext), logger),
          });
        }
      : undefined,

    async stop() {
      await socketMode?.stop();
      socketMode = null;
    },
  };
}
