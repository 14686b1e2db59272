// A small MCP tool server of our own, built with the official SDK's McpServer, for tests: over
// stdio (run as its own OS process) or Streamable HTTP (a real HTTP server on loopback, in this
// process). It keeps a journal of every JSON-RPC message it receives, so a test can see
// `tools/call` arrive and `notifications/cancelled` follow an interrupt.
//
// Stdio:  node --import tsx test/support/mcp-server.ts   (env MCP_TEST_JOURNAL: a file that gets
//         one JSON line per event; MCP_TEST_TOOLS: comma-separated tools to offer, default all)
// HTTP:   const server = await startMcpHttpServer({ token: "t" }); server.url, server.journal
import { randomUUID } from "node:crypto";
import { appendFileSync, readFileSync } from "node:fs";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { timingSafeEqual } from "node:crypto";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import { isInitializeRequest, type JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";

export const MCP_SERVER_SCRIPT = join(import.meta.dirname, "mcp-server.ts");

export interface JournalEntry {
  pid: number;
  /** "started" when a server process or HTTP session began, "received" for a message, "aborted" when a running call's signal fired. */
  event: "started" | "received" | "aborted";
  /** The HTTP session it belongs to (several clients may share one HTTP server). */
  session?: string;
  method?: string;
  id?: string | number;
  params?: Record<string, unknown>;
  at: number;
}

export const ALL_TEST_TOOLS = ["echo", "fail", "slow", "crash", "add_tool"] as const;
/** Offered only when asked for by name. */
export const EXTRA_TEST_TOOLS = ["huge_error"] as const;
export type TestToolName = (typeof ALL_TEST_TOOLS)[number] | (typeof EXTRA_TEST_TOOLS)[number];

export interface TestServerHooks {
  journal(entry: Omit<JournalEntry, "pid" | "at">): void;
  /** What the `crash` tool does: a stdio server exits; an HTTP server drops every connection. */
  crash(): void;
  /** Tools added by `add_tool`, offered by every session from then on. */
  addedTools: string[];
  tools: readonly TestToolName[];
}

const text = (value: string): { content: Array<{ type: "text"; text: string }> } => ({ content: [{ type: "text", text: value }] });

function registerAdded(server: McpServer, name: string): void {
  server.registerTool(name, { description: `A tool added at run time (${name}).`, inputSchema: {} }, () => text(`${name} is here`));
}

/** An McpServer with the test tools; its incoming messages go to the journal once connected. */
export function createTestMcpServer(hooks: TestServerHooks): McpServer {
  const server = new McpServer({ name: "switchboard-test-tools", version: "1.0.0" });
  const offered = new Set<string>(hooks.tools);
  if (offered.has("echo")) {
    server.registerTool(
      "echo",
      { description: "Echoes the text back.", inputSchema: { text: z.string().describe("What to echo.") } },
      ({ text: value }) => text(`echo: ${value}`),
    );
  }
  if (offered.has("fail")) {
    server.registerTool("fail", { description: "Always fails (isError).", inputSchema: {} }, () => ({
      ...text("the tool failed on purpose"),
      isError: true,
    }));
  }
  if (offered.has("huge_error")) {
    server.registerTool(
      "huge_error",
      { description: "Throws an error of chars characters.", inputSchema: { chars: z.number().int().min(1) } },
      ({ chars }) => {
        throw new Error("x".repeat(chars));
      },
    );
  }
  if (offered.has("slow")) {
    server.registerTool(
      "slow",
      { description: "Answers after ms milliseconds, unless cancelled.", inputSchema: { ms: z.number().int().min(0) } },
      ({ ms }, extra) =>
        new Promise((done) => {
          const timer = setTimeout(() => done(text(`slept ${ms} ms`)), ms);
          extra.signal.addEventListener("abort", () => {
            clearTimeout(timer);
            hooks.journal({ event: "aborted", id: extra.requestId, session: extra.sessionId });
            done(text("cancelled"));
          });
        }),
    );
  }
  if (offered.has("crash")) {
    server.registerTool("crash", { description: "Takes the server down mid-call.", inputSchema: {} }, () => {
      hooks.crash();
      return new Promise(() => undefined);
    });
  }
  if (offered.has("add_tool")) {
    server.registerTool(
      "add_tool",
      { description: "Adds a tool (the client is told the list changed).", inputSchema: { name: z.string().regex(/^[a-z_]+$/) } },
      ({ name }) => {
        hooks.addedTools.push(name);
        registerAdded(server, name);
        return text(`added ${name}`);
      },
    );
  }
  for (const name of hooks.addedTools) registerAdded(server, name);
  return server;
}

/** Records every message the transport delivers (call after `server.connect(transport)`). */
export function journalIncoming(transport: Transport, hooks: TestServerHooks): void {
  const deliver = transport.onmessage;
  transport.onmessage = (message: JSONRPCMessage, extra) => {
    const m = message as { method?: string; id?: string | number; params?: Record<string, unknown> };
    hooks.journal({ event: "received", session: transport.sessionId, method: m.method, id: m.id, params: m.params });
    deliver?.(message, extra);
  };
}

/** The journal file a stdio server wrote. */
export function readJournal(path: string): JournalEntry[] {
  let raw: string;
  try {
    raw = readFileSync(path, "utf8");
  } catch {
    return [];
  }
  return raw
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line) as JournalEntry);
}

// ---------------------------------------------------------------------------------------------
// Streamable HTTP, in this process

export interface McpHttpServer {
  /** The MCP endpoint. */
  readonly url: string;
  readonly journal: JournalEntry[];
  /** Requests refused for a missing or wrong bearer token. */
  readonly unauthorized: number;
  /** Forget every session, as a restarted server would: the next request with an old session id gets 404. */
  forgetSessions(): Promise<void>;
  close(): Promise<void>;
}

export async function startMcpHttpServer(options: { token: string; tools?: readonly TestToolName[] }): Promise<McpHttpServer> {
  const journal: JournalEntry[] = [];
  const sessions = new Map<string, StreamableHTTPServerTransport>();
  const expected = Buffer.from(`Bearer ${options.token}`);
  let unauthorized = 0;
  const hooks: TestServerHooks = {
    journal: (entry) => journal.push({ ...entry, pid: process.pid, at: Date.now() }),
    crash: () => http.closeAllConnections(),
    addedTools: [],
    tools: options.tools ?? ALL_TEST_TOOLS,
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const given = Buffer.from(req.headers.authorization ?? "");
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
      unauthorized++;
      res.writeHead(401, { "content-type": "application/json" }).end(JSON.stringify({ error: "unauthorized" }));
      return;
    }
    const sessionId = req.headers["mcp-session-id"];
    const known = typeof sessionId === "string" ? sessions.get(sessionId) : undefined;
    if (req.method !== "POST") {
      if (!known) return void res.writeHead(404).end();
      return known.handleRequest(req, res);
    }
    const body = await readJson(req);
    if (known) return known.handleRequest(req, res, body);
    if (sessionId !== undefined) {
      res.writeHead(404, { "content-type": "application/json" });
      res.end(JSON.stringify({ jsonrpc: "2.0", error: { code: -32001, message: "Session not found" }, id: null }));
      return;
    }
    if (!isInitializeRequest(body)) {
      res.writeHead(400, { "content-type": "application/json" });
      res.end(JSON.stringify({ jsonrpc: "2.0", error: { code: -32000, message: "No session: initialize first" }, id: null }));
      return;
    }
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => {
        sessions.set(id, transport);
      },
    });
    const server = createTestMcpServer(hooks);
    await server.connect(transport);
    journalIncoming(transport, hooks);
    hooks.journal({ event: "started" });
    await transport.handleRequest(req, res, body);
  };

  const http = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(500).end(String(err));
      else res.destroy();
    });
  });
  await new Promise<void>((ready) => http.listen(0, "127.0.0.1", () => ready()));
  const { port } = http.address() as AddressInfo;

  const forgetSessions = async (): Promise<void> => {
    const open = [...sessions.values()];
    sessions.clear();
    await Promise.all(open.map((t) => t.close().catch(() => undefined)));
  };
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    journal,
    get unauthorized() {
      return unauthorized;
    },
    forgetSessions,
    async close() {
      await forgetSessions();
      http.closeAllConnections();
      await new Promise<void>((done) => http.close(() => done()));
    },
  };
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const parts: Buffer[] = [];
  for await (const part of req as AsyncIterable<Buffer>) parts.push(part);
  const raw = Buffer.concat(parts).toString("utf8");
  try {
    return raw ? JSON.parse(raw) : undefined;
  } catch {
    return undefined;
  }
}

// ---------------------------------------------------------------------------------------------
// Stdio, as its own process

async function main(): Promise<void> {
  const journalPath = process.env.MCP_TEST_JOURNAL;
  const wanted = process.env.MCP_TEST_TOOLS?.split(",").filter(Boolean) as TestToolName[] | undefined;
  const hooks: TestServerHooks = {
    journal: (entry) => {
      if (journalPath) appendFileSync(journalPath, `${JSON.stringify({ ...entry, pid: process.pid, at: Date.now() })}\n`);
    },
    crash: () => process.exit(3),
    addedTools: [],
    tools: wanted ?? ALL_TEST_TOOLS,
  };
  const server = createTestMcpServer(hooks);
  const transport = new StdioServerTransport();
  await server.connect(transport);
  journalIncoming(transport, hooks);
  hooks.journal({ event: "started" });
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  main().catch((err: unknown) => {
    process.stderr.write(`test MCP server failed: ${String(err)}\n`);
    process.exit(1);
  });
}
