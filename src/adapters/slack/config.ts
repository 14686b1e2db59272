// Slack adapter settings. The bot token sends replies; events arrive over the signed HTTP Events
// API (signing secret), over Socket Mode (app-level token), or both.

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
