export { createDiscordAdapter, type DiscordAdapter, type DiscordAdapterDeps } from "./adapter.js";
export { DEFAULT_DISCORD_API_URL, DISCORD_MAX_CONTENT, discordConfigSection, type DiscordConfig } from "./config.js";
export { discordSessionKey, stripDiscordMention } from "./channels.js";
export { discordMessageLike, normaliseDiscordMessage, type DiscordMessageLike } from "./message.js";
export { normaliseInteractionCommand, type Interaction } from "./interactions.js";
export { createDiscordMessageHandler, startDiscordGatewayClient } from "./gateway-client.js";
export { DiscordRest, DiscordRestError } from "./rest.js";
export { discordPublicKey, verifyDiscordSignature } from "./signature.js";
export { createDiscordStreamingReply, DISCORD_STREAM_EDIT_INTERVAL_MS } from "./streaming.js";
