// One MCP client transport from a server's config: a child process over stdio, or Streamable
// HTTP. A child's stderr is kept (its last lines, credentials masked) so a failed start can say
// why in the log; it may print tokens, so no line leaves here unmasked.
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { McpServerConfig } from "./config.js";
import { redactSecrets } from "./redact.js";

const STDERR_TAIL_LINES = 3;
const STDERR_LINE_CHARS = 200;

export interface OpenedTransport {
  transport: Transport;
  /** The child's last stderr lines (stdio), masked and joined; "" when there are none. */
  stderrTail(): string;
}

export function openTransport(config: McpServerConfig, onStderrLine: (line: string) => void): OpenedTransport {
  const spec = config.transport;
  if (spec.kind === "http") {
    const transport = new StreamableHTTPClientTransport(new URL(spec.url), {
      requestInit: { headers: spec.headers },
      // The event stream carries tools/list_changed: keep reopening it (the SDK gives up after 2 tries).
      reconnectionOptions: { initialReconnectionDelay: 500, maxReconnectionDelay: 10_000, reconnectionDelayGrowFactor: 2, maxRetries: Number.POSITIVE_INFINITY },
    });
    return { transport, stderrTail: () => "" };
  }
  const transport = new StdioClientTransport({
    command: spec.command,
    args: spec.args,
    env: spec.env,
    cwd: spec.cwd ?? undefined,
    stderr: "pipe",
  });
  const tail: string[] = [];
  let partial = "";
  transport.stderr?.on("data", (chunk: Buffer) => {
    const lines = (partial + chunk.toString("utf8")).split(/\r?\n/);
    partial = lines.pop() ?? "";
    for (const raw of lines) {
      const line = redactSecrets(raw.trim()).slice(0, STDERR_LINE_CHARS);
      if (!line) continue;
      onStderrLine(line);
      tail.push(line);
      if (tail.length > STDERR_TAIL_LINES) tail.shift();
    }
  });
  return { transport, stderrTail: () => [...tail, redactSecrets(partial.trim()).slice(0, STDERR_LINE_CHARS)].filter(Boolean).join(" | ") };
}
