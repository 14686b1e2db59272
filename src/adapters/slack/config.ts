// Slack adapter settings and their config section (YAML `slack:`, SLACK_* variables). The bot token
// sends replies; events arrive over the signed HTTP Events API (signing secret), over Socket Mode
// (app-level token), or both.
import { z } from "zod";
import { ConfigError, envValue, type ConfigSection } from "../../shared/config-section.js";

export interface SlackConfig {
  /** SLACK_SIGNING_SECRET: verifies requests to /slack/events and /slack/commands; unset: no HTTP routes. */
  signingSecret?: string | null;
  /** SLACK_BOT_TOKEN (xoxb-...): sends replies. */
  botToken: string;
  /** SLACK_APP_TOKEN (xapp-...): opens Socket Mode connections; unset: no Socket Mode. */
  appToken?: string | null;
  /** SLACK_API_URL; default https://slack.com/api/ */
  apiUrl?: string | null;
  /** The bot's own user id; found from the event's authorizations or auth.test when unset. */
  botUserId?: string | null;
}

export const DEFAULT_SLACK_API_URL = "https://slack.com/api/";

/** App-level tokens are the only ones apps.connections.open takes. */
export const SLACK_APP_TOKEN_PREFIX = "xapp-";

/** Slack is on with a bot token and at least one way for events to arrive. */
export function slackEnabled(config: SlackConfig | null | undefined): config is SlackConfig {
  return Boolean(config?.botToken && (config.signingSecret || config.appToken));
}

/** WebClient joins method names straight onto the base URL, so it must end with a slash. */
export function normaliseSlackApiUrl(url: string | null | undefined): string {
  const base = url && url.trim() !== "" ? url.trim() : DEFAULT_SLACK_API_URL;
  return base.endsWith("/") ? base : `${base}/`;
}

/** Socket Mode's app-level token; the message never repeats the value. */
const appTokenSchema = z.string().startsWith(SLACK_APP_TOKEN_PREFIX, "must be an app-level token (xapp-...)");

const slackFileSchema = z
  .object({
    signing_secret: z.string().optional(),
    bot_token: z.string().optional(),
    app_token: appTokenSchema.optional(),
    api_url: z.string().url().optional(),
    bot_user_id: z.string().optional(),
  })
  .strict();

/** YAML `slack:` and SLACK_SIGNING_SECRET, SLACK_BOT_TOKEN, SLACK_APP_TOKEN, SLACK_API_URL, SLACK_BOT_USER_ID; null: Slack off. */
export const slackConfigSection: ConfigSection<typeof slackFileSchema, Required<SlackConfig> | null> = {
  schema: slackFileSchema,
  load(env, file) {
    const signingSecret = envValue(env, "SLACK_SIGNING_SECRET", z.string()) ?? file?.signing_secret;
    const botToken = envValue(env, "SLACK_BOT_TOKEN", z.string()) ?? file?.bot_token;
    const appToken = envValue(env, "SLACK_APP_TOKEN", appTokenSchema) ?? file?.app_token;
    checkSlackKeys(signingSecret, botToken, appToken);
    if (!botToken) return null;
    return {
      signingSecret: signingSecret || null,
      botToken,
      appToken: appToken || null,
      apiUrl: envValue(env, "SLACK_API_URL", z.string().url()) ?? file?.api_url ?? DEFAULT_SLACK_API_URL,
      botUserId: envValue(env, "SLACK_BOT_USER_ID", z.string()) ?? file?.bot_user_id ?? null,
    };
  },
};

/** Slack needs the bot token (replies) and a way for events to arrive: a signing secret, an app-level token, or both. */
function checkSlackKeys(secret: string | undefined, botToken: string | undefined, appToken: string | undefined): void {
  if (!botToken && (secret || appToken)) {
    throw new ConfigError("SLACK_BOT_TOKEN: required with SLACK_SIGNING_SECRET or SLACK_APP_TOKEN (replies are sent with it)");
  }
  if (botToken && !secret && !appToken) {
    throw new ConfigError("SLACK_BOT_TOKEN: also set SLACK_SIGNING_SECRET (Events API over HTTP) or SLACK_APP_TOKEN (Socket Mode), or neither");
  }
  if (botToken?.startsWith(SLACK_APP_TOKEN_PREFIX)) {
    throw new ConfigError("SLACK_BOT_TOKEN: is an app-level token (xapp-...); it belongs in SLACK_APP_TOKEN, and the bot token (xoxb-...) here");
  }
}
