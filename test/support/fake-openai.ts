// A local OpenAI-compatible model server for tests. It checks requests the way the real API does
// (bearer key, body shape, tool message order) and answers from a per-test script: text,
// streamed text, tool calls, HTTP errors, stalls and dropped connections. It records every
// request and counts streams the client abandoned.
//
// In-process:  const fake = await startFakeOpenAI({ apiKey: "k" }); new OpenAI({ baseURL: fake.url, apiKey: "k" })
// Standalone:  node --import tsx test/support/fake-openai.ts --port 0 --api-key k [--slow-chunks 50 --chunk-delay-ms 100]
//              prints its base URL (…/v1) as the first stdout line. Other processes can script it
//              through POST /_fake/enqueue, POST /_fake/default, POST /_fake/release ({name}) and
//              GET /_fake/state (same bearer key).
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { timingSafeEqual } from "node:crypto";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { EchoProvider } from "../../src/agent/providers/echo.js";
import type { ModelMessage } from "../../src/agent/types.js";
import type { ToolCall } from "../../src/state/types.js";

// ---------------------------------------------------------------------------------------------
// Public shapes

export interface ScriptedToolCall {
  name: string;
  /** A JSON string, or an object that is serialised. */
  arguments: string | Record<string, unknown>;
  id?: string;
}

/** One scripted answer. `delayMs` waits before the response starts (before headers). */
export type ScriptedResponse =
  | { kind: "text"; text: string; chunks?: string[]; chunkDelayMs?: number; finishReason?: string; delayMs?: number; holdUntil?: string }
  | {
      kind: "tool_calls";
      /** Send everything but the end of the response, then wait until `release(holdUntil)` (or the client leaves). */
      holdUntil?: string;
      calls: ScriptedToolCall[];
      content?: string;
      /** Split streamed arguments into pieces of this many characters. Default 8. */
      argChunkSize?: number;
      /** Send the calls' argument pieces round-robin instead of one call after another. */
      interleave?: boolean;
      chunkDelayMs?: number;
      delayMs?: number;
    }
  | {
      kind: "error";
      status: number;
      message?: string;
      type?: string;
      code?: string | null;
      /** Sent as the Retry-After header (seconds, or an HTTP date). */
      retryAfter?: number | string;
      headers?: Record<string, string>;
      delayMs?: number;
    }
  /** Headers, the role chunk and `chunks`, then silence until the client goes away. */
  | { kind: "stall"; chunks?: string[]; delayMs?: number }
  /** The socket is destroyed without any response. */
  | { kind: "disconnect"; delayMs?: number }
  /** `Echo: <last user text>`, as the offline echo model answers (tool directives included). */
  | { kind: "echo"; chunkDelayMs?: number; delayMs?: number }
  /** `chunks` streamed chunks, `chunkDelayMs` apart: "Echo: <last user text>", then " 2", " 3", ... */
  | { kind: "slow"; chunks: number; chunkDelayMs: number; delayMs?: number }
  /** `Tool results: <a> | <b>`: the contents of the tool messages that answer the last tool calls. */
  | { kind: "echo_tool_results"; delayMs?: number };

export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  /** The parsed JSON body, or undefined when there was none or it did not parse. */
  body: unknown;
  receivedAt: number;
  /** Status sent (0 when the connection was dropped before a response). */
  status?: number;
  /** The scripted kind that answered it, for completions that passed the checks. */
  answeredWith?: ScriptedResponse["kind"];
  stream: boolean;
  /** The client closed the connection before the response was complete. */
  aborted: boolean;
}

/** One message of a recorded chat completion request, as the client sent it. */
export interface RecordedMessage {
  role: string;
  /** A string, or content parts (`{type: "text", text}`, `{type: "image_url", image_url: {url}}`). */
  content?: unknown;
  tool_calls?: Array<{ id: string; type: string; function: { name: string; arguments: string } }>;
  tool_call_id?: string;
}

/** The messages a recorded chat completion request carried (empty for other requests). */
export function messagesOf(request: RecordedRequest): RecordedMessage[] {
  const body = request.body as { messages?: unknown } | undefined;
  return Array.isArray(body?.messages) ? (body.messages as RecordedMessage[]) : [];
}

/** A message's text: the string content, or its text parts joined. */
export function textOfMessage(message: RecordedMessage): string {
  return textOf(message.content);
}

/** The URLs of a message's `image_url` parts, in order. */
export function imageUrlsOfMessage(message: RecordedMessage): string[] {
  return imageUrlsOf(message.content);
}

export interface FakeOpenAIStats {
  /** Streams the client closed before `[DONE]`. */
  abortedStreams: number;
  completedStreams: number;
  openStreams: number;
}

export interface FakeOpenAIOptions {
  apiKey: string;
  host?: string;
  port?: number;
  /** What answers when the queue is empty. Default `{ kind: "echo" }`. */
  defaultResponse?: ScriptedResponse;
  /** When given, other model names get the API's 404 `model_not_found`. */
  models?: string[];
}

export interface FakeOpenAI {
  /** Base URL for the openai client, ending in /v1. */
  readonly url: string;
  readonly port: number;
  readonly apiKey: string;
  /** Every request to /v1, in arrival order (control requests are not recorded). */
  readonly requests: RecordedRequest[];
  readonly stats: FakeOpenAIStats;
  /** The chat completion requests that passed auth and validation. */
  completionRequests(): RecordedRequest[];
  enqueue(...responses: ScriptedResponse[]): void;
  /** The usage (prompt_tokens, completion_tokens, total_tokens) the fake reported with each completion, in order. */
  reportedUsage(): ReadonlyArray<Record<string, number>>;
  setDefault(response: ScriptedResponse): void;
  /** Let responses scripted with `holdUntil: name` finish (now and from then on). */
  release(name: string): void;
  /** Resolves once `predicate()` holds (checked on every request and stream event), or rejects after `timeoutMs`. */
  waitFor(predicate: () => boolean, timeoutMs?: number, what?: string): Promise<void>;
  close(): Promise<void>;
}

// ---------------------------------------------------------------------------------------------
// Server

export async function startFakeOpenAI(options: FakeOpenAIOptions): Promise<FakeOpenAI> {
  const state = new FakeState(options);
  const server = createServer((req, res) => {
    state.handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) sendError(res, 500, String(err), "server_error");
      else res.destroy();
    });
  });
  await new Promise<void>((ready, fail) => {
    server.once("error", fail);
    server.listen(options.port ?? 0, options.host ?? "127.0.0.1", () => ready());
  });
  const { port } = server.address() as AddressInfo;
  const host = options.host ?? "127.0.0.1";
  return {
    url: `http://${host}:${port}/v1`,
    port,
    apiKey: options.apiKey,
    requests: state.requests,
    stats: state.stats,
    completionRequests: () => state.requests.filter((r) => r.answeredWith !== undefined),
    enqueue: (...responses) => state.queue.push(...responses),
    reportedUsage: () => state.reportedUsage,
    setDefault: (response) => {
      state.defaultResponse = response;
    },
    release: (name) => state.release(name),
    waitFor: (predicate, timeoutMs = 5_000, what = "condition") => state.waitFor(predicate, timeoutMs, what),
    close: async () => {
      state.closing = true;
      state.changed();
      server.closeAllConnections();
      await new Promise<void>((done) => server.close(() => done()));
    },
  };
}

class FakeState {
  readonly requests: RecordedRequest[] = [];
  /** The usage sent with each completion, in order. */
  readonly reportedUsage: Array<Record<string, number>> = [];

  private reportUsage(usage: Record<string, number>): Record<string, number> {
    this.reportedUsage.push(usage);
    return usage;
  }
  readonly stats: FakeOpenAIStats = { abortedStreams: 0, completedStreams: 0, openStreams: 0 };
  readonly queue: ScriptedResponse[] = [];
  defaultResponse: ScriptedResponse;
  closing = false;
  private readonly listeners = new Set<() => void>();
  private readonly released = new Set<string>();
  private readonly key: Buffer;
  private counter = 0;

  constructor(private readonly options: FakeOpenAIOptions) {
    this.defaultResponse = options.defaultResponse ?? { kind: "echo" };
    this.key = Buffer.from(`Bearer ${options.apiKey}`);
  }

  changed(): void {
    for (const listener of [...this.listeners]) listener();
  }

  release(name: string): void {
    this.released.add(name);
    this.changed();
  }

  /** Until `release(name)`, the server closes, or the response's connection closes. */
  private hold(name: string | undefined, res: ServerResponse): Promise<void> {
    if (name === undefined || this.released.has(name) || res.destroyed) return Promise.resolve();
    return new Promise((done) => {
      const check = (): void => {
        if (this.released.has(name) || this.closing || res.destroyed) finish();
      };
      const finish = (): void => {
        this.listeners.delete(check);
        res.off("close", finish);
        done();
      };
      this.listeners.add(check);
      res.once("close", finish);
    });
  }

  waitFor(predicate: () => boolean, timeoutMs: number, what: string): Promise<void> {
    if (predicate()) return Promise.resolve();
    return new Promise((done, fail) => {
      const check = (): void => {
        if (!predicate()) return;
        cleanup();
        done();
      };
      const timer = setTimeout(() => {
        cleanup();
        fail(new Error(`fake OpenAI: timed out after ${timeoutMs} ms waiting for ${what}`));
      }, timeoutMs);
      const cleanup = (): void => {
        clearTimeout(timer);
        this.listeners.delete(check);
      };
      this.listeners.add(check);
    });
  }

  async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = new URL(req.url ?? "/", "http://fake").pathname;
    const raw = await readBody(req, res);
    if (raw === undefined) return;
    if (path.startsWith("/_fake/")) return this.control(req, res, path, raw);

    const record: RecordedRequest = {
      method: req.method ?? "GET",
      path,
      headers: req.headers,
      body: undefined,
      receivedAt: Date.now(),
      stream: false,
      aborted: false,
    };
    this.requests.push(record);
    res.on("finish", () => {
      record.status = res.statusCode;
      this.changed();
    });
    res.on("close", () => {
      if (!res.writableFinished) record.aborted = true;
      record.status ??= res.headersSent ? res.statusCode : 0;
      this.changed();
    });
    this.changed();

    if (!this.authorized(req)) {
      const message = req.headers.authorization
        ? "Incorrect API key provided."
        : "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).";
      return sendError(res, 401, message, "invalid_request_error", req.headers.authorization ? "invalid_api_key" : null);
    }
    const route = `${req.method} ${path.replace(/\/+$/, "")}`;
    if (route === "GET /v1/models") return this.models(res);
    if (route !== "POST /v1/chat/completions") {
      return sendError(res, 404, `Invalid URL (${req.method} ${path})`, "invalid_request_error");
    }

    let body: unknown;
    try {
      body = raw.length ? JSON.parse(raw) : undefined;
    } catch {
      return sendError(
        res,
        400,
        "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON.)",
        "invalid_request_error",
      );
    }
    record.body = body;
    const invalid = validateChatRequest(body);
    if (invalid) return sendError(res, 400, invalid.message, "invalid_request_error", invalid.code ?? null, invalid.param);
    const request = body as ChatRequest;
    if (this.options.models && !this.options.models.includes(request.model)) {
      return sendError(
        res,
        404,
        `The model \`${request.model}\` does not exist or you do not have access to it.`,
        "invalid_request_error",
        "model_not_found",
      );
    }
    record.stream = request.stream === true;
    const script = this.queue.shift() ?? this.defaultResponse;
    record.answeredWith = script.kind;
    this.changed();
    await this.answer(res, request, script);
  }

  private authorized(req: IncomingMessage): boolean {
    const given = Buffer.from(req.headers.authorization ?? "");
    return given.length === this.key.length && timingSafeEqual(given, this.key);
  }

  private models(res: ServerResponse): void {
    const names = this.options.models ?? ["fake-model"];
    sendJson(res, 200, {
      object: "list",
      data: names.map((id) => ({ id, object: "model", created: 1_700_000_000, owned_by: "switchboard-tests" })),
    });
  }

  private async answer(res: ServerResponse, request: ChatRequest, script: ScriptedResponse): Promise<void> {
    if (script.delayMs) await waitOrClosed(script.delayMs, res);
    if (res.destroyed) return;
    if (script.kind === "disconnect") {
      res.socket?.destroy();
      return;
    }
    if (script.kind === "error") return this.scriptedError(res, script);
    const plan = await planFor(script, request);
    const meta = { id: `chatcmpl-fake${++this.counter}`, created: Math.floor(Date.now() / 1000), model: request.model };
    if (request.stream === true) {
      await this.stream(res, plan, meta, request.stream_options?.include_usage === true, request);
    } else {
      if (plan.stall) return waitOrClosed(Number.POSITIVE_INFINITY, res);
      const total = plan.chunkDelayMs * Math.max(0, plan.pieces.length - 1);
      if (total) await waitOrClosed(total, res);
      await this.hold(plan.holdUntil, res);
      if (res.destroyed) return;
      sendJson(res, 200, completionBody(meta, plan, this.reportUsage(usageFor(request, plan))));
    }
  }

  private scriptedError(res: ServerResponse, script: Extract<ScriptedResponse, { kind: "error" }>): void {
    const headers: Record<string, string> = { ...script.headers };
    if (script.retryAfter !== undefined) headers["retry-after"] = String(script.retryAfter);
    const defaults = defaultErrorFor(script.status);
    sendError(
      res,
      script.status,
      script.message ?? defaults.message,
      script.type ?? defaults.type,
      script.code === undefined ? defaults.code : script.code,
      null,
      headers,
    );
  }

  private async stream(res: ServerResponse, plan: Plan, meta: ChunkMeta, includeUsage: boolean, request: ChatRequest): Promise<void> {
    res.writeHead(200, {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-cache",
      connection: "keep-alive",
      "x-request-id": meta.id,
    });
    this.stats.openStreams++;
    let done = false;
    res.on("close", () => {
      this.stats.openStreams--;
      if (done) this.stats.completedStreams++;
      else this.stats.abortedStreams++;
      this.changed();
    });
    const usageField = includeUsage ? { usage: null } : {};
    const send = (delta: Record<string, unknown>, finishReason: string | null = null): void => {
      res.write(sse({ ...chunkHead(meta), choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }], ...usageField }));
    };
    send(plan.toolCalls.length ? { role: "assistant", content: null } : { role: "assistant", content: "", refusal: null });
    for (const [i, piece] of plan.pieces.entries()) {
      if (i > 0 && plan.chunkDelayMs) await waitOrClosed(plan.chunkDelayMs, res);
      if (res.destroyed) return;
      send(piece);
    }
    if (plan.stall) return waitOrClosed(Number.POSITIVE_INFINITY, res);
    await this.hold(plan.holdUntil, res);
    if (res.destroyed) return;
    send({}, plan.finishReason);
    if (includeUsage) {
      const usage = this.reportUsage(usageFor(request, plan));
      res.write(sse({ ...chunkHead(meta), choices: [], usage }));
    }
    res.write("data: [DONE]\n\n");
    done = true;
    res.end();
  }

  private control(req: IncomingMessage, res: ServerResponse, path: string, raw: string): void {
    if (!this.authorized(req)) return sendError(res, 401, "Incorrect API key provided.", "invalid_request_error", "invalid_api_key");
    const route = `${req.method} ${path}`;
    if (route === "GET /_fake/state") {
      return sendJson(res, 200, {
        stats: this.stats,
        queued: this.queue.length,
        requests: this.requests.map(({ headers: _headers, ...rest }) => rest),
      });
    }
    let body: unknown;
    try {
      body = JSON.parse(raw);
    } catch {
      return sendError(res, 400, "body must be JSON", "invalid_request_error");
    }
    if (route === "POST /_fake/enqueue") {
      this.queue.push(...(Array.isArray(body) ? (body as ScriptedResponse[]) : [body as ScriptedResponse]));
      return sendJson(res, 200, { queued: this.queue.length });
    }
    if (route === "POST /_fake/release" && isObject(body) && typeof body.name === "string") {
      this.release(body.name);
      return sendJson(res, 200, { ok: true });
    }
    if (route === "POST /_fake/default") {
      this.defaultResponse = body as ScriptedResponse;
      return sendJson(res, 200, { ok: true });
    }
    sendError(res, 404, `Invalid URL (${req.method} ${path})`, "invalid_request_error");
  }
}

// ---------------------------------------------------------------------------------------------
// What to send: a plan of streamed pieces and the equivalent whole message

interface Plan {
  content: string | null;
  toolCalls: ToolCall[];
  finishReason: string;
  /** Stream deltas after the role chunk. */
  pieces: Array<Record<string, unknown>>;
  chunkDelayMs: number;
  stall: boolean;
  holdUntil?: string;
}

async function planFor(script: Exclude<ScriptedResponse, { kind: "error" | "disconnect" }>, request: ChatRequest): Promise<Plan> {
  switch (script.kind) {
    case "text":
      return { ...textPlan(script.text, script.chunks, script.chunkDelayMs ?? 0, script.finishReason ?? "stop"), holdUntil: script.holdUntil };
    case "slow": {
      const first = `Echo: ${lastUserText(request.messages)}`;
      const chunks = Array.from({ length: script.chunks }, (_, i) => (i === 0 ? first : ` ${i + 1}`));
      return textPlan(chunks.join(""), chunks, script.chunkDelayMs, "stop");
    }
    case "stall":
      return { ...textPlan((script.chunks ?? []).join(""), script.chunks ?? [], 0, "stop"), stall: true };
    case "tool_calls":
      return { ...toolPlan(script), holdUntil: script.holdUntil };
    case "echo_tool_results":
      return textPlan(`Tool results: ${lastToolResults(request.messages).join(" | ")}`, undefined, 0, "stop");
    case "echo": {
      const result = await new EchoProvider({ toolDirectives: true }).complete({ messages: toModelMessages(request.messages), signal: new AbortController().signal });
      if (result.toolCalls.length) {
        return toolPlan({
          kind: "tool_calls",
          calls: result.toolCalls.map((c) => ({ id: c.id, name: c.function.name, arguments: c.function.arguments })),
          chunkDelayMs: script.chunkDelayMs,
        });
      }
      return textPlan(result.content ?? "", undefined, script.chunkDelayMs ?? 0, "stop");
    }
  }
}

function textPlan(text: string, chunks: string[] | undefined, chunkDelayMs: number, finishReason: string): Plan {
  const pieces = chunks ?? (text.match(/\s*\S+|\s+$/g) ?? []);
  return { content: text, toolCalls: [], finishReason, pieces: pieces.map((content) => ({ content })), chunkDelayMs, stall: false };
}

function toolPlan(script: Extract<ScriptedResponse, { kind: "tool_calls" }>): Plan {
  const toolCalls: ToolCall[] = script.calls.map((call) => ({
    id: call.id ?? `call_${Math.random().toString(36).slice(2, 14)}`,
    type: "function",
    function: {
      name: call.name,
      arguments: typeof call.arguments === "string" ? call.arguments : JSON.stringify(call.arguments),
    },
  }));
  const size = Math.max(1, script.argChunkSize ?? 8);
  const perCall = toolCalls.map((call, index) => {
    const head = { index, id: call.id, type: "function", function: { name: call.function.name, arguments: "" } };
    const args = call.function.arguments.match(new RegExp(`[\\s\\S]{1,${size}}`, "g")) ?? [];
    return [head, ...args.map((piece) => ({ index, function: { arguments: piece } }))];
  });
  const ordered = script.interleave ? roundRobin(perCall) : perCall.flat();
  const pieces: Array<Record<string, unknown>> = [];
  if (script.content) pieces.push(...(script.content.match(/\s*\S+|\s+$/g) ?? []).map((content) => ({ content })));
  pieces.push(...ordered.map((delta) => ({ tool_calls: [delta] })));
  return { content: script.content ?? null, toolCalls, finishReason: "tool_calls", pieces, chunkDelayMs: script.chunkDelayMs ?? 0, stall: false };
}

function roundRobin<T>(lists: T[][]): T[] {
  const out: T[] = [];
  for (let i = 0; out.length < lists.reduce((n, l) => n + l.length, 0); i++) {
    for (const list of lists) if (i < list.length) out.push(list[i]);
  }
  return out;
}

interface ChunkMeta {
  id: string;
  created: number;
  model: string;
}

function chunkHead(meta: ChunkMeta): Record<string, unknown> {
  return { id: meta.id, object: "chat.completion.chunk", created: meta.created, model: meta.model, system_fingerprint: "fp_fake" };
}

function completionBody(meta: ChunkMeta, plan: Plan, usage: Record<string, number>): Record<string, unknown> {
  const message: Record<string, unknown> = { role: "assistant", content: plan.content, refusal: null, annotations: [] };
  if (plan.toolCalls.length) message.tool_calls = plan.toolCalls;
  return {
    id: meta.id,
    object: "chat.completion",
    created: meta.created,
    model: meta.model,
    choices: [{ index: 0, message, logprobs: null, finish_reason: plan.finishReason }],
    usage,
    system_fingerprint: "fp_fake",
  };
}

function usageFor(request: ChatRequest, plan: Plan): Record<string, number> {
  const prompt = request.messages.reduce((n, m) => n + words(textOf(m.content)), 0);
  const completion = words(plan.content ?? "") + plan.toolCalls.reduce((n, c) => n + words(c.function.arguments), 0);
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
}

function words(text: string): number {
  return text.split(/\s+/).filter(Boolean).length;
}

// ---------------------------------------------------------------------------------------------
// Request checks, phrased like the real API's 400s

export interface WireMessage {
  role: string;
  content?: unknown;
  name?: string;
  tool_calls?: Array<{ id: string; type: string; function: { name: string; arguments: string } }>;
  tool_call_id?: string;
}

interface ChatRequest {
  model: string;
  messages: WireMessage[];
  stream?: boolean;
  stream_options?: { include_usage?: boolean };
  tools?: unknown[];
}

interface Invalid {
  message: string;
  param?: string;
  code?: string;
}

const KNOWN_PARAMS = new Set([
  "model", "messages", "tools", "tool_choice", "parallel_tool_calls", "stream", "stream_options", "temperature",
  "top_p", "n", "max_tokens", "max_completion_tokens", "stop", "presence_penalty", "frequency_penalty",
  "logit_bias", "logprobs", "top_logprobs", "user", "seed", "response_format", "metadata", "store",
  "service_tier", "reasoning_effort", "modalities", "audio", "prediction", "functions", "function_call",
  "web_search_options", "verbosity", "prompt_cache_key", "safety_identifier",
]);
const ROLES = ["system", "assistant", "user", "function", "tool", "developer"];
const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

export function validateChatRequest(body: unknown): Invalid | undefined {
  if (!isObject(body)) return { message: "We could not parse the JSON body of your request: expected an object." };
  for (const key of Object.keys(body)) {
    if (!KNOWN_PARAMS.has(key)) return { message: `Unrecognized request argument supplied: ${key}` };
  }
  if (body.model === undefined) return { message: "you must provide a model parameter", param: "model" };
  if (typeof body.model !== "string" || !body.model) return typeError("model", "a string", body.model);
  if (body.messages === undefined) {
    return { message: "Missing required parameter: 'messages'.", param: "messages", code: "missing_required_parameter" };
  }
  if (!Array.isArray(body.messages)) return typeError("messages", "an array", body.messages);
  if (body.messages.length === 0) {
    return {
      message: "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.",
      param: "messages",
      code: "empty_array",
    };
  }
  for (const [i, message] of (body.messages as unknown[]).entries()) {
    const invalid = validateMessage(message, `messages[${i}]`);
    if (invalid) return invalid;
  }
  const order = validateToolOrder(body.messages as WireMessage[]);
  if (order) return order;
  if (body.stream !== undefined && typeof body.stream !== "boolean") return typeError("stream", "a boolean", body.stream);
  if (body.stream_options !== undefined && body.stream_options !== null && body.stream !== true) {
    return { message: "The 'stream_options' parameter is only allowed when 'stream' is enabled.", param: "stream_options" };
  }
  if (body.temperature !== undefined) {
    if (typeof body.temperature !== "number") return typeError("temperature", "a decimal", body.temperature);
    if (body.temperature < 0 || body.temperature > 2) {
      return { message: `Invalid 'temperature': decimal above maximum value. Expected a value <= 2, but got ${body.temperature} instead.`, param: "temperature", code: "decimal_above_max_value" };
    }
  }
  if (body.tools !== undefined) {
    if (!Array.isArray(body.tools)) return typeError("tools", "an array", body.tools);
    for (const [i, tool] of (body.tools as unknown[]).entries()) {
      const invalid = validateTool(tool, `tools[${i}]`);
      if (invalid) return invalid;
    }
  }
  return undefined;
}

function validateMessage(message: unknown, at: string): Invalid | undefined {
  if (!isObject(message)) return typeError(at, "an object", message);
  if (typeof message.role !== "string" || !ROLES.includes(message.role)) {
    return {
      message: `Invalid value: '${String(message.role)}'. Supported values are: 'system', 'assistant', 'user', 'function', 'tool', and 'developer'.`,
      param: `${at}.role`,
      code: "invalid_value",
    };
  }
  const content = message.content;
  const contentOk = typeof content === "string" || Array.isArray(content);
  if (message.role === "assistant") {
    if (content !== undefined && content !== null && !contentOk) return typeError(`${at}.content`, "a string", content);
    const calls = message.tool_calls;
    if ((content === undefined || content === null) && calls === undefined) {
      return { message: `Invalid value for '${at}.content': expected a string, got null.`, param: `${at}.content` };
    }
    if (calls !== undefined) {
      if (!Array.isArray(calls)) return typeError(`${at}.tool_calls`, "an array", calls);
      for (const [j, call] of (calls as unknown[]).entries()) {
        const p = `${at}.tool_calls[${j}]`;
        if (!isObject(call)) return typeError(p, "an object", call);
        if (typeof call.id !== "string") return missing(`${p}.id`);
        if (call.type !== "function") return typeError(`${p}.type`, "'function'", call.type);
        if (!isObject(call.function)) return missing(`${p}.function`);
        if (typeof call.function.name !== "string") return missing(`${p}.function.name`);
        if (typeof call.function.arguments !== "string") return missing(`${p}.function.arguments`);
      }
    }
    return undefined;
  }
  if (content === undefined) return missing(`${at}.content`);
  if (!contentOk) return typeError(`${at}.content`, "a string", content);
  if (Array.isArray(content)) {
    for (const [j, part] of (content as unknown[]).entries()) {
      const invalid = validatePart(part, `${at}.content[${j}]`, message.role);
      if (invalid) return invalid;
    }
  }
  if (message.role === "tool" && typeof message.tool_call_id !== "string") return missing(`${at}.tool_call_id`);
  return undefined;
}

const DATA_IMAGE = /^data:image\/(png|jpeg|gif|webp);base64,([A-Za-z0-9+/]+={0,2})$/;

/** Content parts as the API takes them: text anywhere, images only from the user, data URLs that decode. */
function validatePart(part: unknown, at: string, role: string): Invalid | undefined {
  if (!isObject(part)) return typeError(at, "an object", part);
  if (part.type === "text") return typeof part.text === "string" ? undefined : missing(`${at}.text`);
  if (part.type !== "image_url") {
    return { message: `Invalid value: '${String(part.type)}'. Supported values are: 'text' and 'image_url'.`, param: `${at}.type`, code: "invalid_value" };
  }
  if (role !== "user") return { message: `Image URLs are only allowed for messages with role 'user', but this message with role '${role}' contains an image URL.`, param: at, code: "invalid_value" };
  const image = part.image_url;
  if (!isObject(image) || typeof image.url !== "string") return missing(`${at}.image_url.url`);
  if (image.url.startsWith("data:")) {
    if (!DATA_IMAGE.test(image.url)) return { message: "Invalid image data URL: expected data:image/(png|jpeg|gif|webp);base64,<data>.", param: `${at}.image_url.url`, code: "invalid_image_format" };
  } else if (!/^https?:\/\//.test(image.url)) {
    return { message: "Invalid image URL.", param: `${at}.image_url.url`, code: "invalid_image_url" };
  }
  return undefined;
}

/** Tool results must answer the assistant message right before them, and answer every call of it. */
function validateToolOrder(messages: WireMessage[]): Invalid | undefined {
  let open: Set<string> | undefined;
  for (const [i, message] of messages.entries()) {
    if (message.role === "tool") {
      if (!open || !open.has(message.tool_call_id ?? "")) {
        return {
          message: "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
          param: `messages.[${i}].role`,
        };
      }
      open.delete(message.tool_call_id ?? "");
      continue;
    }
    if (open && open.size > 0) return unanswered(open);
    open = message.role === "assistant" && message.tool_calls?.length ? new Set(message.tool_calls.map((c) => c.id)) : undefined;
  }
  return open && open.size > 0 ? unanswered(open) : undefined;
}

function unanswered(ids: Set<string>): Invalid {
  return {
    message: `An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: ${[...ids].join(", ")}`,
    param: "messages",
  };
}

function validateTool(tool: unknown, at: string): Invalid | undefined {
  if (!isObject(tool)) return typeError(at, "an object", tool);
  if (tool.type !== "function") return typeError(`${at}.type`, "'function'", tool.type);
  if (!isObject(tool.function)) return missing(`${at}.function`);
  const name = tool.function.name;
  if (typeof name !== "string") return missing(`${at}.function.name`);
  if (!TOOL_NAME.test(name)) {
    return {
      message: `Invalid '${at}.function.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.`,
      param: `${at}.function.name`,
      code: "invalid_value",
    };
  }
  if (tool.function.description !== undefined && typeof tool.function.description !== "string") {
    return typeError(`${at}.function.description`, "a string", tool.function.description);
  }
  if (tool.function.parameters !== undefined && !isObject(tool.function.parameters)) {
    return typeError(`${at}.function.parameters`, "an object", tool.function.parameters);
  }
  return undefined;
}

function typeError(param: string, expected: string, got: unknown): Invalid {
  const kind = got === null ? "null" : Array.isArray(got) ? "an array" : `a ${typeof got}`;
  return { message: `Invalid type for '${param}': expected ${expected}, but got ${kind} instead.`, param, code: "invalid_type" };
}

function missing(param: string): Invalid {
  return { message: `Missing required parameter: '${param}'.`, param, code: "missing_required_parameter" };
}

function isObject(value: unknown): value is Record<string, unknown> & { function?: unknown } {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

// ---------------------------------------------------------------------------------------------
// Helpers

function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .map((part: unknown) => (isObject(part) && part.type === "text" && typeof part.text === "string" ? part.text : ""))
    .join("");
}

/** The tool messages after the last assistant message that asked for tools. */
function lastToolResults(messages: WireMessage[]): string[] {
  const asked = messages.findLastIndex((m) => m.role === "assistant" && (m.tool_calls?.length ?? 0) > 0);
  return asked < 0 ? [] : messages.slice(asked + 1).filter((m) => m.role === "tool").map((m) => textOf(m.content));
}

/** The tools (function name, description, JSON schema) a recorded chat completion request offered. */
export function offeredToolsOf(request: RecordedRequest): Array<{ name: string; description?: string; parameters?: Record<string, unknown> }> {
  const tools = isObject(request.body) && Array.isArray(request.body.tools) ? (request.body.tools as unknown[]) : [];
  return tools.flatMap((tool) => {
    if (!isObject(tool) || !isObject(tool.function) || typeof tool.function.name !== "string") return [];
    const { name, description, parameters } = tool.function as { name: string; description?: string; parameters?: Record<string, unknown> };
    return [{ name, description, parameters }];
  });
}

function imageUrlsOf(content: unknown): string[] {
  if (!Array.isArray(content)) return [];
  return content.flatMap((part: unknown) => {
    if (!isObject(part) || part.type !== "image_url" || !isObject(part.image_url)) return [];
    return typeof part.image_url.url === "string" ? [part.image_url.url] : [];
  });
}

/** The images of data URLs, as the echo model reads them. */
function imagesOf(content: unknown): Array<{ contentType: string; data: Uint8Array }> {
  return imageUrlsOf(content).flatMap((url) => {
    const match = DATA_IMAGE.exec(url);
    return match ? [{ contentType: `image/${match[1]}`, data: Buffer.from(match[2], "base64") }] : [];
  });
}

function lastUserText(messages: WireMessage[]): string {
  for (let i = messages.length - 1; i >= 0; i--) if (messages[i].role === "user") return textOf(messages[i].content);
  return "";
}

function toModelMessages(messages: WireMessage[]): ModelMessage[] {
  return messages.flatMap((m): ModelMessage[] => {
    if (m.role !== "system" && m.role !== "user" && m.role !== "assistant" && m.role !== "tool") return [];
    const images = imagesOf(m.content);
    return [{ role: m.role, content: textOf(m.content), tool_calls: m.tool_calls as ToolCall[] | undefined, tool_call_id: m.tool_call_id, ...(images.length ? { images } : {}) }];
  });
}

function defaultErrorFor(status: number): { message: string; type: string; code: string | null } {
  if (status === 429) return { message: "Rate limit reached for requests. Please try again later.", type: "requests", code: "rate_limit_exceeded" };
  if (status >= 500) return { message: "The server had an error while processing your request. Sorry about that!", type: "server_error", code: null };
  return { message: `Request failed with status ${status}.`, type: "invalid_request_error", code: null };
}

function sendError(
  res: ServerResponse,
  status: number,
  message: string,
  type: string,
  code: string | null = null,
  param: string | null = null,
  headers: Record<string, string> = {},
): void {
  sendJson(res, status, { error: { message, type, param: param ?? null, code } }, headers);
}

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text), ...headers });
  res.end(text);
}

function sse(data: unknown): string {
  return `data: ${JSON.stringify(data)}\n\n`;
}

const MAX_BODY_BYTES = 10 * 1024 * 1024;

/** The request body as text; undefined when it was too large (413 already sent). */
async function readBody(req: IncomingMessage, res: ServerResponse): Promise<string | undefined> {
  const parts: Buffer[] = [];
  let size = 0;
  for await (const part of req as AsyncIterable<Buffer>) {
    size += part.length;
    if (size > MAX_BODY_BYTES) {
      sendError(res, 413, "Request body too large.", "invalid_request_error");
      return undefined;
    }
    parts.push(part);
  }
  return Buffer.concat(parts).toString("utf8");
}

/** Waits `ms`, ending early when the response's connection closes. */
function waitOrClosed(ms: number, res: ServerResponse): Promise<void> {
  if (res.destroyed) return Promise.resolve();
  return new Promise((done) => {
    const finish = (): void => {
      clearTimeout(timer);
      res.off("close", finish);
      done();
    };
    const timer = Number.isFinite(ms) ? setTimeout(finish, ms) : undefined;
    res.once("close", finish);
  });
}

// ---------------------------------------------------------------------------------------------
// Standalone process

function argValue(args: string[], name: string): string | undefined {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
}

async function main(args: string[]): Promise<void> {
  const slowChunks = Number(argValue(args, "--slow-chunks") ?? 0);
  const chunkDelayMs = Number(argValue(args, "--chunk-delay-ms") ?? 0);
  const fake = await startFakeOpenAI({
    apiKey: argValue(args, "--api-key") ?? process.env.FAKE_OPENAI_API_KEY ?? "test-key",
    host: argValue(args, "--host"),
    port: Number(argValue(args, "--port") ?? 0),
    defaultResponse: slowChunks > 0 ? { kind: "slow", chunks: slowChunks, chunkDelayMs } : { kind: "echo", chunkDelayMs },
  });
  process.stdout.write(`${fake.url}\n`);
  const stop = (): void => {
    fake.close().then(() => process.exit(0), () => process.exit(1));
  };
  process.once("SIGTERM", stop);
  process.once("SIGINT", stop);
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  main(process.argv.slice(2)).catch((err: unknown) => {
    process.stderr.write(`fake OpenAI failed to start: ${String(err)}\n`);
    process.exit(1);
  });
}
