// MCP tool servers through a running gateway: real MCP servers of our own (stdio child processes
// and a Streamable HTTP server on loopback, built with the official SDK), a fake OpenAI-compatible
// model that asks for their tools, and what a user sees: the reply, the transcript (sessions
// API), the events (WebSocket) and /health.
import { randomUUID } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { messagesOf, offeredToolsOf, startFakeOpenAI, type FakeOpenAI, type RecordedRequest } from "../support/fake-openai.js";
import { startTestGateway, waitFor, type TestGateway } from "../support/gateway.js";
import { MCP_SERVER_SCRIPT, readJournal, startMcpHttpServer, type JournalEntry, type McpHttpServer } from "../support/mcp-server.js";
import { deletePrefix, newRedisClient } from "../support/redis.js";
import { makeTempDir } from "../support/tmp.js";
import { WsTestClient, type ServerFrame } from "../clients/support/ws-client.js";

const REPO = resolve(import.meta.dirname, "..", "..");
const HTTP_TIMEOUT_MS = 3_000;
// What a failing server prints to stderr, and the password in an HTTP server's URL: neither may
// reach /health or the log.
const STDERR_SECRET = "sk-live-4f9a8b7c6d5e4f3a2b1c0d9e8f7a";
const URL_PASSWORD = "Pa55-word-of-the-mcp-host";

interface ServerHealth {
  transport: "stdio" | "http";
  state: "starting" | "connected" | "failed";
  tools: number;
  last_error: "exited" | "start_timeout" | "session_lost" | "http_error" | "failed" | null;
  restarts: number;
}

interface StoredMessage {
  role: string;
  content: string | null;
  tool_calls?: Array<{ id: string; type: string; function: { name: string; arguments: string } }> | null;
  tool_call_id?: string | null;
  tool_name?: string | null;
}

let fake: FakeOpenAI;
let http: McpHttpServer;
let gw: TestGateway;
let temp: { dir: string; cleanup: () => void };
let journals: { local: string; crashy: string };
const logLines: string[] = [];
const clients: WsTestClient[] = [];

beforeAll(async () => {
  fake = await startFakeOpenAI({ apiKey: "model-key" });
  http = await startMcpHttpServer({ token: "mcp-secret" });
  temp = makeTempDir("sb-mcp");
  journals = { local: join(temp.dir, "local.jsonl"), crashy: join(temp.dir, "crashy.jsonl") };
  const stdio = (journal: string, tools?: string): Record<string, unknown> => ({
    command: process.execPath,
    args: ["--import", "tsx", MCP_SERVER_SCRIPT],
    cwd: REPO,
    env: { MCP_TEST_JOURNAL: journal, ...(tools ? { MCP_TEST_TOOLS: tools } : {}) },
  });
  const headers = { Authorization: "Bearer mcp-secret" };
  const configPath = join(temp.dir, "switchboard.yaml");
  // JSON is YAML: the file goes through the same loader and validation as an operator's.
  writeFileSync(
    configPath,
    JSON.stringify({
      mcp_servers: {
        local: { ...stdio(journals.local), timeout_ms: 20_000 },
        crashy: stdio(journals.crashy, "echo,crash"),
        remote: { url: http.url, headers, timeout_ms: HTTP_TIMEOUT_MS },
        wsonly: { url: http.url, headers, platforms: ["websocket"] },
        broken: { command: process.execPath, args: ["-e", "console.error('missing API token'); process.exit(2)"] },
        leaky: { command: process.execPath, args: ["-e", `console.error('upstream refused MCP_TOKEN=${STDERR_SECRET}'); console.error('retry with ${STDERR_SECRET}'); process.exit(3)`] },
        passworded: { url: withPassword(http.url) },
      },
    }),
  );
  const logger = pino({ level: "info" }, { write: (line: string) => void logLines.push(line) });
  gw = await startTestGateway({
    env: { SWITCHBOARD_CONFIG: configPath, LLM_BASE_URL: fake.url, LLM_API_KEY: "model-key", LLM_MODEL: "fake-model" },
    logger,
  });
  // A loaded machine may take longer than the gateway's start-up wait to boot a child.
  await waitFor(
    async () => {
      const { mcp } = await health();
      return ["local", "crashy", "remote", "wsonly"].every((name) => mcp[name]?.state === "connected") && ["broken", "leaky", "passworded"].every((name) => mcp[name]?.state === "failed");
    },
    60_000,
    "the MCP servers to be up (and the broken one failed)",
  );
}, 90_000);

afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await gw?.stop();
  if (gw) {
    const redis = newRedisClient();
    await deletePrefix(redis, gw.env.SWITCHBOARD_QUEUE_PREFIX).finally(() => redis.disconnect());
  }
  await http?.close();
  await fake?.close();
  temp?.cleanup();
});

const newSession = (): string => `mcp-${randomUUID().slice(0, 8)}`;

function withPassword(url: string): string {
  const withCredentials = new URL(url);
  withCredentials.username = "mcpuser";
  withCredentials.password = URL_PASSWORD;
  return withCredentials.href;
}

async function health(): Promise<{ status: string; mcp: Record<string, ServerHealth> }> {
  const res = await fetch(`${gw.gateway.url}/health`);
  return (await res.json()) as { status: string; mcp: Record<string, ServerHealth> };
}

async function chat(session: string, text: string): Promise<{ status: number; content: string | null }> {
  const res = await fetch(`${gw.gateway.url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-session-id": session },
    body: JSON.stringify({ model: "fake-model", messages: [{ role: "user", content: text }] }),
  });
  const body = (await res.json()) as { choices?: Array<{ message: { content: string | null } }> };
  return { status: res.status, content: body.choices?.[0]?.message.content ?? null };
}

async function transcript(session: string): Promise<StoredMessage[]> {
  const res = await fetch(`${gw.gateway.url}/api/sessions/${session}/messages`);
  expect(res.status).toBe(200);
  return ((await res.json()) as { messages: StoredMessage[] }).messages;
}

/** The model requests of the turns whose user input mentions `marker`, in order. */
function requestsWith(marker: string): RecordedRequest[] {
  return fake.completionRequests().filter((r) => messagesOf(r).some((m) => m.role === "user" && String(m.content).includes(marker)));
}

async function connect(): Promise<WsTestClient> {
  const client = await WsTestClient.connect(`${gw.gateway.url!.replace(/^http/, "ws")}/ws`, null);
  clients.push(client);
  return client;
}

const eventOf = (session: string, kind: string) => (f: ServerFrame): boolean => f.type === "event" && f.session_id === session && f.kind === kind;

/** The newest `tools/call` of `tool` a journal holds. */
function lastCall(entries: JournalEntry[], tool: string): JournalEntry | undefined {
  return entries.filter((e) => e.method === "tools/call" && e.params?.name === tool).at(-1);
}

function cancellationOf(entries: JournalEntry[], call: JournalEntry): JournalEntry | undefined {
  return entries.find((e) => e.method === "notifications/cancelled" && e.session === call.session && e.params?.requestId === call.id);
}

describe("MCP tools through a running gateway", () => {
  it.each([
    ["stdio", "local"],
    ["Streamable HTTP", "remote"],
  ])("a %s server's tool result reaches the model and the reply, the transcript and the events", async (_kind, server) => {
    const session = newSession();
    const ws = await connect();
    await ws.subscribe(session);
    const callId = `call_${server}_${session.slice(-8)}`;
    const args = JSON.stringify({ text: `ping ${session}` });
    fake.enqueue({ kind: "tool_calls", calls: [{ id: callId, name: `${server}__echo`, arguments: args }] }, { kind: "echo_tool_results" });

    const reply = await chat(session, `use the echo tool (${session})`);
    expect(reply).toEqual({ status: 200, content: `Tool results: echo: ping ${session}` });

    // The model was offered the server's tools, with their JSON schemas, beside the built-in one.
    const [first, second] = requestsWith(session);
    const offered = offeredToolsOf(first);
    expect(offered.map((t) => t.name)).toEqual(expect.arrayContaining(["get_current_time", `${server}__echo`, `${server}__fail`, `${server}__slow`]));
    expect(offered.find((t) => t.name === `${server}__echo`)).toMatchObject({
      description: "Echoes the text back.",
      parameters: { type: "object", properties: { text: { type: "string", description: "What to echo." } }, required: ["text"] },
    });
    expect(offered.find((t) => t.name === `${server}__echo`)?.parameters).not.toHaveProperty("$schema");
    // ... and read the result in its next request.
    expect(messagesOf(second).find((m) => m.role === "tool")).toMatchObject({ tool_call_id: callId, content: `echo: ping ${session}` });

    const messages = await transcript(session);
    expect(messages.map((m) => m.role)).toEqual(["user", "assistant", "tool", "assistant"]);
    expect(messages[1].tool_calls).toEqual([{ id: callId, type: "function", function: { name: `${server}__echo`, arguments: args } }]);
    expect(messages[2]).toMatchObject({ tool_call_id: callId, tool_name: `${server}__echo`, content: `echo: ping ${session}` });
    expect(messages[3].content).toBe(`Tool results: echo: ping ${session}`);

    const started = await ws.waitFor(eventOf(session, "tool.started"), 5_000, "tool.started");
    expect(started.data).toMatchObject({ call_id: callId, name: `${server}__echo`, arguments: args });
    const finished = await ws.waitFor(eventOf(session, "tool.finished"), 5_000, "tool.finished");
    expect(finished.data).toMatchObject({ call_id: callId, name: `${server}__echo`, ok: true, result: `echo: ping ${session}` });
    await ws.waitFor(eventOf(session, "turn.completed"), 5_000, "turn.completed");
  });

  it.each([["local"], ["remote"]])("a tool that returns isError (%s) is a tool error the model reads; the turn goes on", async (server) => {
    const session = newSession();
    const ws = await connect();
    await ws.subscribe(session);
    fake.enqueue({ kind: "tool_calls", calls: [{ name: `${server}__fail`, arguments: {} }] }, { kind: "echo_tool_results" });
    const reply = await chat(session, `try the failing tool (${session})`);
    expect(reply).toEqual({ status: 200, content: "Tool results: Error: the tool failed on purpose" });
    const finished = await ws.waitFor(eventOf(session, "tool.finished"), 5_000, "tool.finished");
    expect(finished.data).toMatchObject({ name: `${server}__fail`, ok: false, result: "Error: the tool failed on purpose" });
    await ws.waitFor(eventOf(session, "turn.completed"), 5_000, "turn.completed");
  });

  it("a call past the server's timeout_ms is a tool error, and the server is told to cancel it", async () => {
    const session = newSession();
    fake.enqueue({ kind: "tool_calls", calls: [{ name: "remote__slow", arguments: { ms: 60_000 } }] }, { kind: "echo_tool_results" });
    const started = Date.now();
    const reply = await chat(session, `a slow call (${session})`);
    expect(reply).toEqual({ status: 200, content: `Tool results: Error: the tool did not answer within ${HTTP_TIMEOUT_MS} ms (MCP server "remote")` });
    // The time limit fired: the error came long before the tool would answer (60 s), with a
    // bound several times the limit (3 s) so a busy machine cannot trip it.
    expect(Date.now() - started).toBeLessThan(20_000);
    const call = lastCall(http.journal, "slow");
    expect(call?.params?.arguments).toEqual({ ms: 60_000 });
    await waitFor(() => cancellationOf(http.journal, call!), 5_000, "notifications/cancelled");
    await waitFor(() => http.journal.some((e) => e.event === "aborted" && e.session === call!.session && e.id === call!.id), 5_000, "the handler to be aborted");
  });

  it("a stdio server that crashes mid-call: a tool error, the turn goes on, it is restarted and its tools come back", async () => {
    const firstPid = readJournal(journals.crashy).find((e) => e.event === "started")?.pid;
    expect(firstPid).toBeGreaterThan(0);
    const session = newSession();
    fake.enqueue({ kind: "tool_calls", calls: [{ name: "crashy__crash", arguments: {} }] }, { kind: "echo_tool_results" });
    const reply = await chat(session, `crash it (${session})`);
    expect(reply).toEqual({ status: 200, content: 'Tool results: Error: MCP server "crashy" closed the connection during the call' });

    const restarted = await waitFor(
      async () => {
        const { mcp } = await health();
        return mcp.crashy.state === "connected" && mcp.crashy.restarts >= 1 ? mcp.crashy : null;
      },
      30_000,
      "crashy to be restarted",
    );
    expect(restarted).toMatchObject({ tools: 2, last_error: "exited" });
    const pids = readJournal(journals.crashy).filter((e) => e.event === "started").map((e) => e.pid);
    expect(pids.length).toBeGreaterThanOrEqual(2);
    expect(pids.at(-1)).not.toBe(firstPid);

    fake.enqueue({ kind: "tool_calls", calls: [{ name: "crashy__echo", arguments: { text: "back again" } }] }, { kind: "echo_tool_results" });
    const again = await chat(session, `and now echo (${session})`);
    expect(again).toEqual({ status: 200, content: "Tool results: echo: back again" });
    const [request] = requestsWith(`and now echo (${session})`);
    expect(offeredToolsOf(request).map((t) => t.name)).toEqual(expect.arrayContaining(["crashy__echo", "crashy__crash"]));
  });

  it("an HTTP server that drops the connection mid-call: a tool error, the turn goes on", async () => {
    const session = newSession();
    fake.enqueue({ kind: "tool_calls", calls: [{ name: "remote__crash", arguments: {} }] }, { kind: "echo_tool_results" });
    const reply = await chat(session, `drop it (${session})`);
    expect(reply.status).toBe(200);
    expect(reply.content).toMatch(/^Tool results: Error: MCP server "remote": /);
  });

  it("a server that cannot start is logged with the reason and reported in /health; its tools are not offered; the gateway runs", async () => {
    const report = await health();
    expect(report.status).toBe("ok");
    expect(report.mcp.broken).toMatchObject({ transport: "stdio", state: "failed", tools: 0, last_error: "exited" });
    expect(report.mcp.local).toMatchObject({ transport: "stdio", state: "connected", last_error: null });
    expect(report.mcp.remote).toMatchObject({ transport: "http", state: "connected" });
    for (const request of fake.completionRequests()) {
      expect(offeredToolsOf(request).filter((t) => t.name.startsWith("broken__"))).toEqual([]);
    }
    const logged = logLines.map((line) => JSON.parse(line) as { level: number; mcp_server?: string; reason?: string; msg: string });
    expect(logged).toContainEqual(
      expect.objectContaining({ level: 40, mcp_server: "broken", reason: expect.stringMatching(/missing API token/), msg: expect.stringMatching(/failed to start/) }),
    );
    // Secrets of the config (the HTTP server's bearer token) never reach the log.
    expect(logLines.join("\n")).not.toContain("mcp-secret");
  });

  it("/health shows a failed server's error class only; neither it nor the log carries the server's secrets", async () => {
    const report = await health();
    expect(report.mcp.leaky).toEqual({ transport: "stdio", state: "failed", tools: 0, last_error: "exited", restarts: expect.any(Number) });
    expect(report.mcp.passworded).toEqual({ transport: "http", state: "failed", tools: 0, last_error: "failed", restarts: expect.any(Number) });
    const shown = JSON.stringify(report);
    expect(shown).not.toContain(STDERR_SECRET);
    expect(shown).not.toContain(URL_PASSWORD);
    expect(shown).not.toContain("MCP_TOKEN");
    // The log keeps the reason, with a masked stderr tail and the URL without its credentials.
    const logged = logLines.map((line) => JSON.parse(line) as { mcp_server?: string; reason?: string });
    expect(logged).toContainEqual(expect.objectContaining({ mcp_server: "leaky", reason: expect.stringContaining("stderr: upstream refused MCP_TOKEN=***") }));
    expect(logged).toContainEqual(expect.objectContaining({ mcp_server: "passworded", reason: expect.stringContaining("http://***@127.0.0.1:") }));
    expect(logLines.join("\n")).not.toContain(STDERR_SECRET);
    expect(logLines.join("\n")).not.toContain(URL_PASSWORD);
  });

  it("only the tools a server allows on the turn's platform are offered", async () => {
    const apiSession = newSession();
    const apiReply = await chat(apiSession, `which tools (${apiSession})`);
    expect(apiReply.status).toBe(200);
    const apiTools = offeredToolsOf(requestsWith(apiSession)[0]).map((t) => t.name);
    expect(apiTools).toEqual(expect.arrayContaining(["local__echo", "remote__echo"]));
    expect(apiTools.filter((name) => name.startsWith("wsonly__"))).toEqual([]);

    const wsSession = newSession();
    const ws = await connect();
    await ws.subscribe(wsSession);
    ws.send({ type: "send", session_id: wsSession, text: `which tools here (${wsSession})`, client_message_id: "m-1" });
    await ws.waitFor(eventOf(wsSession, "turn.completed"), 15_000, "turn.completed");
    const wsTools = offeredToolsOf(requestsWith(wsSession)[0]).map((t) => t.name);
    expect(wsTools).toEqual(expect.arrayContaining(["local__echo", "remote__echo", "wsonly__echo", "wsonly__slow"]));
  });

  it("an interrupt (POST /api/sessions/:id/interrupt) cancels a slow stdio call at once; the server gets notifications/cancelled", async () => {
    const session = newSession();
    const ws = await connect();
    await ws.subscribe(session);
    // An earlier call of the same turn has finished: only the one in flight is cancelled.
    fake.enqueue({ kind: "tool_calls", calls: [{ name: "local__echo", arguments: { text: session } }, { name: "local__slow", arguments: { ms: 30_000 } }] });
    const reply = chat(session, `a long call (${session})`);
    const call = await waitFor(() => {
      const found = lastCall(readJournal(journals.local), "slow");
      return found && (found.params?.arguments as { ms?: number } | undefined)?.ms === 30_000 && found.at > Date.now() - 60_000 ? found : null;
    }, 15_000, "the slow call to reach the server");

    const res = await fetch(`${gw.gateway.url}/api/sessions/${session}/interrupt`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
    expect(res.status).toBe(202);
    // The call would run 30 s: the turn's end, the cancellation and the handler's abort all come
    // while it still runs, so they came from the interrupt.
    await ws.waitFor(eventOf(session, "turn.interrupted"), 5_000, "turn.interrupted");
    await waitFor(() => cancellationOf(readJournal(journals.local), call), 5_000, "notifications/cancelled");
    // The server acted on it: the call's handler saw its signal abort.
    await waitFor(() => readJournal(journals.local).some((e) => e.event === "aborted" && e.id === call.id), 5_000, "the handler to be aborted");
    const echoCall = readJournal(journals.local).find((e) => e.method === "tools/call" && (e.params?.arguments as { text?: string } | undefined)?.text === session);
    expect(echoCall).toBeDefined();
    expect(cancellationOf(readJournal(journals.local), echoCall!)).toBeUndefined();
    await reply;

    const finished = ws.events(session).filter((f) => f.kind === "tool.finished");
    expect(finished.map((f) => f.data)).toMatchObject([
      { name: "local__echo", ok: true },
      { name: "local__slow", ok: false },
    ]);
    const messages = await transcript(session);
    expect(messages.filter((m) => m.role === "tool")).toMatchObject([
      { tool_name: "local__echo", content: `echo: ${session}` },
      { tool_name: "local__slow", content: expect.stringMatching(/^Cancelled/) },
    ]);
  });

  it("an interrupt frame on the WebSocket cancels a slow HTTP call at once; the server gets notifications/cancelled", async () => {
    const session = newSession();
    const ws = await connect();
    await ws.subscribe(session);
    fake.enqueue({ kind: "tool_calls", calls: [{ name: "wsonly__slow", arguments: { ms: 30_000 } }] });
    const callsBefore = http.journal.length;
    ws.send({ type: "send", session_id: session, text: `a long call here (${session})`, client_message_id: "m-1" });
    const call = await waitFor(() => lastCall(http.journal.slice(callsBefore), "slow"), 15_000, "the slow call to reach the server");

    ws.send({ type: "interrupt", session_id: session });
    // The call would run 30 s: what follows all comes while it still runs.
    await ws.waitFor(eventOf(session, "turn.interrupted"), 5_000, "turn.interrupted");
    await waitFor(() => cancellationOf(http.journal, call), 5_000, "notifications/cancelled");
    await waitFor(() => http.journal.some((e) => e.event === "aborted" && e.session === call.session && e.id === call.id), 5_000, "the handler to be aborted");
  });

  it.each([
    ["stdio", "local", "late_stdio"],
    ["HTTP", "remote", "late_http"],
  ])("a %s server's tools/list_changed updates the tools offered", async (_kind, server, added) => {
    const before = (await health()).mcp[server].tools;
    const session = newSession();
    fake.enqueue({ kind: "tool_calls", calls: [{ name: `${server}__add_tool`, arguments: { name: added } }] }, { kind: "echo_tool_results" });
    expect(await chat(session, `add a tool (${session})`)).toEqual({ status: 200, content: `Tool results: added ${added}` });
    await waitFor(async () => (await health()).mcp[server].tools === before + 1, 10_000, "the new tool to be listed");

    fake.enqueue({ kind: "tool_calls", calls: [{ name: `${server}__${added}`, arguments: {} }] }, { kind: "echo_tool_results" });
    expect(await chat(session, `use it (${session})`)).toEqual({ status: 200, content: `Tool results: ${added} is here` });
    const [request] = requestsWith(`use it (${session})`);
    expect(offeredToolsOf(request).map((t) => t.name)).toContain(`${server}__${added}`);
  });

  it("an HTTP server that forgot our session (restarted): the gateway starts a new one and its tools work again", async () => {
    const restartsBefore = (await health()).mcp.remote.restarts;
    await http.forgetSessions();
    await waitFor(
      async () => {
        const { mcp } = await health();
        return mcp.remote.state === "connected" && mcp.remote.restarts > restartsBefore;
      },
      20_000,
      "a new session with the HTTP server",
    );
    const session = newSession();
    fake.enqueue({ kind: "tool_calls", calls: [{ name: "remote__echo", arguments: { text: "new session" } }] }, { kind: "echo_tool_results" });
    expect(await chat(session, `echo after the restart (${session})`)).toEqual({ status: 200, content: "Tool results: echo: new session" });
    expect(http.unauthorized).toBe(0);
  });
});

describe("stopping the gateway", () => {
  it("closes every MCP client and stdio child process", async () => {
    const pids = [journals.local, journals.crashy].map((path) => readJournal(path).filter((e) => e.event === "started").at(-1)!.pid);
    for (const pid of pids) expect(alive(pid)).toBe(true);
    await gw.gateway.stop();
    await waitFor(() => pids.every((pid) => !alive(pid)), 10_000, "the MCP server processes to exit");
  });
});

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
