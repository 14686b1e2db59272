// MCP tool servers: their config, connections and the tools they offer to turns.
export { DEFAULT_MCP_TIMEOUT_MS, MCP_SERVER_NAME, type McpServerConfig, type McpStdioTransportConfig, type McpHttpTransportConfig } from "./config.js";
export type { McpServerState, McpServerStatus } from "./connection.js";
export { McpServers, type McpServersOptions } from "./servers.js";
export { offeredToolName } from "./tool-names.js";
