// Slack adapter settings.

export interface SlackConfig {
  /** SLACK_SIGNING_SECRET: verifies requests from Slack. */
  signingSecret: string;
  /** SLACK_BOT_TOKEN (xoxb-...): sends replies. */
  botToken: string;
  /** SLACK_API_URL; default https://slack.com/api/ */
  apiUrl?: string | null;
  /** The bot's own user id; found from the event's authorizations or auth.test when unset. */
  botUserId?: string | null;
}

export const DEFAULT_SLACK_API_URL = "https://slack.com/api/";

/** WebClient joins method names straight onto the base URL, so it must end with a slash. */
export function normaliseSlackApiUrl(url: string | null | undefined): string {
  const base = url && url.trim() !== "" ? url.trim() : DEFAULT_SLACK_API_URL;
  return base.endsWith("/") ? base : `${base}/`;
}
