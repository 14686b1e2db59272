// One MCP tool server: connect (spawn a child or reach a URL), list its tools at start and on
// `notifications/tools/list_changed`, call them, and reconnect with backoff when a child exits
// or a start fails. Its status is what /health reports: a coarse class of its last error, never
// the reason itself (that goes to the log, with credentials masked).
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPError } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CallToolResultSchema, ToolListChangedNotificationSchema, type CallToolResult, type Tool } from "@modelcontextprotocol/sdk/types.js";
import type { Logger } from "pino";
import type { McpServerConfig } from "./config.js";
import { errorClassOf, redactSecrets, type McpErrorClass } from "./redact.js";
import { callFailure, resultText } from "./results.js";
import { openTransport, type OpenedTransport } from "./transport.js";

export type McpServerState = "starting" | "connected" | "failed";

/** One server's line in /health (snake_case: it is JSON for operators). */
export interface McpServerStatus {
  transport: "stdio" | "http";
  state: McpServerState;
  tools: number;
  /** Why it last failed or disconnected, as a class (the reason is logged). */
  last_error: McpErrorClass | null;
  restarts: number;
}

export interface McpConnectionOptions {
  name: string;
  config: McpServerConfig;
  logger: Logger;
  clientInfo: { name: string; version: string };
  /** Delay before the n-th consecutive retry: initialMs * 2^(n-1), at most maxMs. */
  backoff: { initialMs: number; maxMs: number };
  /** Bound of the initialize handshake and of each tools/list. */
  connectTimeoutMs: number;
  /** The server's tools or state changed. */
  onChange: () => void;
}

/** A connection that stayed up this long resets the backoff: its next crash restarts quickly. */
const STABLE_MS = 30_000;

/** An error's message with credentials masked: what the log gets. */
function reasonOf(err: unknown): string {
  return redactSecrets(err instanceof Error ? err.message : String(err));
}

interface Failure {
  errorClass: McpErrorClass;
  /** For the log: masked. */
  reason: string;
}

const SESSION_GONE: Failure = { errorClass: "session_lost", reason: "the server no longer knows our session (HTTP 404); starting a new one" };

function isSessionGone(err: unknown): boolean {
  return err instanceof StreamableHTTPError && err.code === 404;
}

function startFailure(err: unknown, opened: OpenedTransport | null): Failure {
  const errorClass = errorClassOf(err);
  const reason =
    errorClass === "exited" ? "the server closed the connection during start-up"
    : errorClass === "start_timeout" ? "the server did not answer during start-up"
    : reasonOf(err);
  return { errorClass, reason: `${reason}${stderrNote(opened)}` };
}

/** The child's last stderr lines, masked by the transport as they arrive. */
function stderrNote(opened: OpenedTransport | null): string {
  const tail = opened?.stderrTail();
  return tail ? ` (stderr: ${tail})` : "";
}

/** How long after transport trouble the tools are listed again (the event stream reopens first). */
const RELIST_AFTER_ERROR_MS = 2_000;

export class McpConnection {
  private state: McpServerState = "starting";
  private client: Client | null = null;
  private tools: Tool[] = [];
  private lastError: McpErrorClass | null = null;
  /** The last failure's (masked) reason: a repeat is logged at debug level only. */
  private lastReason: string | null = null;
  private restarts = 0;
  /** Consecutive failed or short-lived connections; sets the next retry's delay. */
  private failures = 0;
  private connectedAt = 0;
  /** Bumped when an attempt starts or ends, so late callbacks of an old one do nothing. */
  private generation = 0;
  private retryTimer: NodeJS.Timeout | null = null;
  private relistTimer: NodeJS.Timeout | null = null;
  private listing: Promise<void> = Promise.resolve();
  private closed = false;

  constructor(private readonly options: McpConnectionOptions) {}

  get name(): string {
    return this.options.name;
  }

  get config(): McpServerConfig {
    return this.options.config;
  }

  /** The tools of a connected server; none while it is starting or failed. */
  listedTools(): readonly Tool[] {
    return this.state === "connected" ? this.tools : [];
  }

  status(): McpServerStatus {
    return {
      transport: this.options.config.transport.kind,
      state: this.state,
      tools: this.listedTools().length,
      last_error: this.lastError,
      restarts: this.restarts,
    };
  }

  /** The first attempt; settles when it connected or failed (a failure schedules a retry). */
  start(): Promise<void> {
    return this.connect();
  }

  /** Calls one tool; its text result, or an Error the model reads (isError, timeout, a dead server). */
  async callTool(tool: string, args: Record<string, unknown>, signal: AbortSignal): Promise<string> {
    const { name, config } = this.options;
    const client = this.client;
    const generation = this.generation;
    if (!client || this.state !== "connected") {
      throw new Error(`MCP server "${name}" is not available (${this.state}${this.lastError ? `: ${this.lastError}` : ""})`);
    }
    signal.throwIfAborted();
    // The SDK keeps its abort listener after a request settles: a signal of its own per call, so
    // an interrupt cancels (`notifications/cancelled`) only the call in flight, not finished ones.
    const call = new AbortController();
    const cancel = (): void => call.abort(signal.reason);
    signal.addEventListener("abort", cancel, { once: true });
    let result: CallToolResult;
    try {
      // Parsed with CallToolResultSchema, so it is never the legacy `toolResult` shape.
      result = (await client.callTool({ name: tool, arguments: args }, CallToolResultSchema, { signal: call.signal, timeout: config.timeoutMs })) as CallToolResult;
    } catch (err) {
      if (signal.aborted) throw err;
      if (isSessionGone(err)) this.lose(generation, client, SESSION_GONE);
      throw callFailure(name, err, config.timeoutMs);
    } finally {
      signal.removeEventListener("abort", cancel);
    }
    const text = resultText(result);
    if (result.isError) throw new Error(text || "the tool reported an error without a message");
    return text;
  }

  /** Closes the client (and so the child process, even mid-start); no more retries. */
  async close(): Promise<void> {
    this.closed = true;
    this.generation++;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = null;
    if (this.relistTimer) clearTimeout(this.relistTimer);
    this.relistTimer = null;
    const client = this.client;
    this.client = null;
    this.tools = [];
    await client?.close().catch(() => undefined);
  }

  private async connect(): Promise<void> {
    const { name, config, logger, clientInfo, connectTimeoutMs } = this.options;
    const generation = ++this.generation;
    const client = new Client(clientInfo, { capabilities: {} });
    // Held from the start, so close() stops a child that is still starting.
    this.client = client;
    // A retry after failed starts stays "failed" until it connects; a restart after a crash is "starting".
    if (this.state !== "failed") this.setState("starting");
    let opened: OpenedTransport | null = null;
    client.onerror = (err) => {
      logger.debug({ mcp_server: name, err: reasonOf(err) }, "MCP transport error");
      // A Streamable HTTP server that restarted no longer knows our session (its event stream
      // says so on reconnecting): start a new one.
      if (this.state === "connected" && isSessionGone(err)) this.lose(generation, client, SESSION_GONE);
      // A notification sent while the event stream was down is lost: look at the list again.
      else if (this.state === "connected") this.relistSoon(generation, client);
    };
    // Only a connected server's close matters here: during start-up the pending request fails
    // with it, and the catch below has the better reason.
    client.onclose = () => {
      if (this.state === "connected") this.lose(generation, client, this.exitReason(opened));
    };
    client.setNotificationHandler(ToolListChangedNotificationSchema, () =>
      this.listTools(generation, client, false).catch((err: unknown) =>
        logger.warn({ mcp_server: name, err: reasonOf(err) }, "listing an MCP server's changed tools failed; keeping the previous list"),
      ),
    );
    try {
      opened = openTransport(config, (line) => logger.debug({ mcp_server: name, stderr: line }, "MCP server stderr (masked)"));
      await client.connect(opened.transport, { timeout: connectTimeoutMs });
      await this.listTools(generation, client, true);
      // Closed, or lost, meanwhile: whoever moved the generation on closed the client.
      if (generation !== this.generation) return;
      this.connectedAt = Date.now();
      this.setState("connected");
      logger.info({ mcp_server: name, transport: config.transport.kind, tools: this.tools.length }, "MCP server connected");
    } catch (err) {
      // The child's last stderr lines arrive with its exit; let them land first.
      await new Promise((resolve) => setImmediate(resolve));
      this.lose(generation, client, startFailure(err, opened));
    }
  }

  /** The attempt `generation` is over (failed to start, exited, or lost its session): retry later. */
  private lose(generation: number, client: Client, { errorClass, reason }: Failure): void {
    if (generation !== this.generation || this.closed) return;
    this.generation++;
    const wasConnected = this.state === "connected";
    this.client = null;
    this.tools = [];
    void client.close().catch(() => undefined);
    if (wasConnected && Date.now() - this.connectedAt >= STABLE_MS) this.failures = 0;
    const previous = this.lastReason;
    this.lastReason = reason;
    this.lastError = errorClass;
    const { name, logger } = this.options;
    if (wasConnected) logger.warn({ mcp_server: name, reason }, "MCP server disconnected; restarting");
    else if (reason !== previous) logger.warn({ mcp_server: name, reason }, "MCP server failed to start; its tools are not offered");
    else logger.debug({ mcp_server: name, reason }, "MCP server failed to start again");
    this.setState(wasConnected ? "starting" : "failed");
    this.scheduleRetry();
  }

  private scheduleRetry(): void {
    const { initialMs, maxMs } = this.options.backoff;
    const delay = Math.min(maxMs, initialMs * 2 ** Math.min(this.failures, 30));
    this.failures++;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      if (this.closed) return;
      this.restarts++;
      void this.connect();
    }, delay);
    this.retryTimer.unref();
  }

  private exitReason(opened: OpenedTransport | null): Failure {
    return { errorClass: "exited", reason: `the server closed the connection${stderrNote(opened)}` };
  }

  /** tools/list, every page. */
  private async fetchTools(client: Client): Promise<Tool[]> {
    const tools: Tool[] = [];
    let cursor: string | undefined;
    do {
      const page = await client.listTools(cursor ? { cursor } : undefined, { timeout: this.options.connectTimeoutMs });
      tools.push(...page.tools);
      cursor = page.nextCursor;
    } while (cursor);
    return tools;
  }

  /** Lists the tools (at start, and on list_changed); one listing at a time, so the latest wins. */
  /** One re-list a little after transport trouble (several errors in a row make one). */
  private relistSoon(generation: number, client: Client): void {
    if (this.relistTimer || this.closed) return;
    this.relistTimer = setTimeout(() => {
      this.relistTimer = null;
      if (generation !== this.generation) return;
      this.listTools(generation, client, false).catch((err: unknown) =>
        this.options.logger.debug({ mcp_server: this.options.name, err: reasonOf(err) }, "re-listing an MCP server's tools failed; keeping the previous list"),
      );
    }, RELIST_AFTER_ERROR_MS);
    this.relistTimer.unref();
  }

  private listTools(generation: number, client: Client, initial: boolean): Promise<void> {
    const current = (): boolean => generation === this.generation && this.client === client;
    const run = this.listing.then(async () => {
      if (!current()) return;
      const tools = await this.fetchTools(client);
      if (!current()) return;
      this.tools = tools;
      if (initial) return;
      this.options.logger.info({ mcp_server: this.options.name, tools: tools.length }, "MCP server's tools changed");
      this.options.onChange();
    });
    this.listing = run.catch(() => undefined);
    return run;
  }

  private setState(state: McpServerState): void {
    this.state = state;
    this.options.onChange();
  }
}
