// The tools a turn is offered: the built-in ones plus the MCP servers' tools allowed on the turn's
// platform. One registry per platform, rebuilt only when a server's tools or state changed:
// deriving JSON schemas and validators per turn would cost more than a turn's SQL reads.
import type { Logger } from "pino";
import { createBuiltinTools, type ToolRegistry } from "../agent/index.js";
import type { McpServers } from "../agent/tools/mcp/index.js";

export class ToolCatalog {
  private readonly registries = new Map<string, ToolRegistry>();
  private builtFor = -1;

  constructor(
    private readonly mcp: McpServers | null,
    private readonly logger: Logger,
  ) {}

  /** The tools of a platform's turns; `servers`: only those MCP servers' (a channel's settings), else every one allowed there. */
  forPlatform(platform: string, servers: readonly string[] | null = null): ToolRegistry {
    const version = this.mcp?.toolsVersion ?? 0;
    if (version !== this.builtFor) {
      this.registries.clear();
      this.builtFor = version;
    }
    const key = servers === null ? platform : `${platform}\u0000${servers.join(",")}`;
    let registry = this.registries.get(key);
    if (!registry) {
      registry = this.build(platform, servers);
      this.registries.set(key, registry);
    }
    return registry;
  }

  private build(platform: string, servers: readonly string[] | null): ToolRegistry {
    const registry = createBuiltinTools();
    for (const tool of this.mcp?.toolsFor(platform, servers) ?? []) {
      try {
        registry.registerJsonSchema(tool);
      } catch (err) {
        // A duplicate name (two tools that differ only in characters models refuse) or a bad schema.
        this.logger.warn({ tool: tool.name, err: (err as Error).message }, "an MCP tool is not offered");
      }
    }
    return registry;
  }
}
