// Every configured MCP tool server of this process: started with the workers, offered to turns as
// JSON-schema tools named `<server>__<tool>` (only on the platforms a server allows), reported in
// /health, and closed (children included) when the gateway stops. A server that cannot start
// never stops the gateway: it is logged, reported, retried, and its tools are not offered.
import type { Logger } from "pino";
import type { JsonSchemaTool } from "../registry.js";
import { offeredOn, type McpServerConfig } from "./config.js";
import { McpConnection, type McpServerStatus } from "./connection.js";
import { offeredToolName } from "./tool-names.js";

export interface McpServersOptions {
  servers: Record<string, McpServerConfig>;
  logger: Logger;
  clientInfo: { name: string; version: string };
  backoff?: { initialMs: number; maxMs: number };
  connectTimeoutMs?: number;
}

const DEFAULT_BACKOFF = { initialMs: 500, maxMs: 60_000 };
const DEFAULT_CONNECT_TIMEOUT_MS = 30_000;

export class McpServers {
  private readonly connections: McpConnection[];
  private version = 0;

  constructor(options: McpServersOptions) {
    this.connections = Object.entries(options.servers).map(
      ([name, config]) =>
        new McpConnection({
          name,
          config,
          logger: options.logger,
          clientInfo: options.clientInfo,
          backoff: options.backoff ?? DEFAULT_BACKOFF,
          connectTimeoutMs: options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
          onChange: () => {
            this.version++;
          },
        }),
    );
  }

  /**
   * Starts every server; resolves when each first attempt ended or after `waitMs`, whichever
   * comes first (a slow server keeps starting, and its tools appear when it is up).
   */
  async start(waitMs: number): Promise<void> {
    const attempts = Promise.all(this.connections.map((c) => c.start()));
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, waitMs);
    });
    try {
      await Promise.race([attempts, deadline]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Bumped whenever a server's tools or state change: cached tool sets are stale. */
  get toolsVersion(): number {
    return this.version;
  }

  /** The tools a turn on `platform` is offered: connected servers that allow the platform. */
  /** The tools offered on `platform`; `servers`: only those servers' (a channel's settings). */
  toolsFor(platform: string, servers: readonly string[] | null = null): JsonSchemaTool[] {
    const tools: JsonSchemaTool[] = [];
    for (const connection of this.connections) {
      if (!offeredOn(connection.config, platform)) continue;
      if (servers !== null && !servers.includes(connection.name)) continue;
      for (const tool of connection.listedTools()) {
        const { $schema: _ignored, ...parameters } = tool.inputSchema;
        tools.push({
          name: offeredToolName(connection.name, tool.name),
          description: tool.description ?? tool.title ?? "",
          parameters,
          handler: (args, ctx) => connection.callTool(tool.name, args, ctx.signal),
        });
      }
    }
    return tools;
  }

  status(): Record<string, McpServerStatus> {
    return Object.fromEntries(this.connections.map((c) => [c.name, c.status()]));
  }

  async close(): Promise<void> {
    await Promise.all(this.connections.map((c) => c.close()));
  }
}
