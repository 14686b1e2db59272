// The settings of one MCP tool server, as the core runs with them (main/config.ts loads them from
// the YAML file's `mcp_servers`).

/** A server the gateway starts as a child process and speaks to over its stdin/stdout. */
export interface McpStdioTransportConfig {
  kind: "stdio";
  command: string;
  args: string[];
  /** Added to the few variables a child inherits (PATH, HOME, ...); never logged. */
  env: Record<string, string>;
  cwd: string | null;
}

/** A server reached over Streamable HTTP. */
export interface McpHttpTransportConfig {
  kind: "http";
  url: string;
  /** Sent with every request (e.g. Authorization); never logged. */
  headers: Record<string, string>;
}

export interface McpServerConfig {
  transport: McpStdioTransportConfig | McpHttpTransportConfig;
  /** Platforms whose turns are offered this server's tools; null: every platform. */
  platforms: string[] | null;
  /** One tool call's bound. */
  timeoutMs: number;
}

export const DEFAULT_MCP_TIMEOUT_MS = 60_000;

/** Server names: they prefix the tool names the model sees (`<server>__<tool>`). */
export const MCP_SERVER_NAME = /^[A-Za-z0-9_-]{1,32}$/;

export function offeredOn(config: McpServerConfig, platform: string): boolean {
  return config.platforms === null || config.platforms.includes(platform);
}
