export { createSlackAdapter, SLACK_MAX_TEXT, type SlackAdapter, type SlackAdapterDeps } from "./adapter.js";
export { DEFAULT_SLACK_API_URL, SLACK_APP_TOKEN_PREFIX, slackConfigSection, slackEnabled, type SlackConfig } from "./config.js";
export { classifySlackEvent, slackThreadKey, stripBotMention, type SlackEventDecision } from "./events.js";
export { commandText, normaliseSlackCommand } from "./commands.js";
export { slackSignature, verifySlackSignature, SLACK_TIMESTAMP_TOLERANCE_SECONDS } from "./signature.js";
export { createSlackStreamingReply, SLACK_STREAM_EDIT_INTERVAL_MS } from "./streaming.js";
