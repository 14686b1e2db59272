// The settings of the MCP tool servers, and their config section: the YAML file's `mcp_servers`
// (main/config.ts composes it with the other sections).
import { z } from "zod";
import { intFrom, type ConfigSection } from "../../../shared/config-section.js";

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

/** YAML scalars (`PORT: 8080`) are meant as strings in an environment or a header. */
const stringMap = z.record(z.string(), z.union([z.string(), z.number(), z.boolean()]).transform(String));

/** A stdio server (`command`) or a Streamable HTTP server (`url`); the error names the stray key. */
const mcpServerSchema = z.object({
  command: z.string().min(1).optional(),
  args: z.array(z.string()).optional(),
  env: stringMap.optional(),
  cwd: z.string().min(1).optional(),
  url: z.url({ protocol: /^https?$/, error: "must be an http(s) URL" }).optional(),
  headers: stringMap.optional(),
  platforms: z.array(z.string().regex(/^[a-z0-9_-]+$/, "platform names are lower-case letters, digits, '-' and '_'")).min(1).optional(),
  timeout_ms: intFrom(1, 3_600_000).optional(),
}).strict().superRefine((server, ctx) => {
  if (Boolean(server.command) === Boolean(server.url)) {
    ctx.addIssue({ code: "custom", message: "set either command (a stdio server) or url (a Streamable HTTP server)" });
    return;
  }
  const strays = server.url ? (["args", "env", "cwd"] as const) : (["headers"] as const);
  for (const key of strays) {
    if (server[key] !== undefined) ctx.addIssue({ code: "custom", path: [key], message: server.url ? "only for stdio servers (with command)" : "only for HTTP servers (with url)" });
  }
});
type McpServerFile = z.infer<typeof mcpServerSchema>;

const mcpServersSchema = z.record(z.string().regex(MCP_SERVER_NAME, "server names are 1-32 letters, digits, '-' and '_'"), mcpServerSchema);

function serverConfig(s: McpServerFile): McpServerConfig {
  return {
    transport: s.url
      ? { kind: "http", url: s.url, headers: s.headers ?? {} }
      : { kind: "stdio", command: s.command ?? "", args: s.args ?? [], env: s.env ?? {}, cwd: s.cwd ?? null },
    platforms: s.platforms ?? null,
    timeoutMs: s.timeout_ms ?? DEFAULT_MCP_TIMEOUT_MS,
  };
}

/** YAML `mcp_servers: {<name>: {command, args?, env?, cwd?} | {url, headers?}, platforms?, timeout_ms?}` (no variables). */
export const mcpConfigSection: ConfigSection<typeof mcpServersSchema, Record<string, McpServerConfig>> = {
  schema: mcpServersSchema,
  load: (_env, file) => Object.fromEntries(Object.entries(file ?? {}).map(([name, server]) => [name, serverConfig(server)])),
};
