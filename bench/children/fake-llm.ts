// A fake OpenAI-compatible model server for the LLM-bound benchmark: POST .../chat/completions
// answers `fakeReply(last user text)` after a model's delays, streamed (SSE chunks in OpenAI's
// format, then `data: [DONE]`) or whole. It counts calls by the caller's API key (Authorization:
// Bearer), so the runner can tell each gateway process's share of the model calls. node:http and
// one timer per stream step: it shares the cores with the systems it serves.
// argv: turnMs firstTokenShare chunks
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { fromParent, toParent } from "../lib/child.js";
import { fakeReply, splitChunks } from "../lib/fake-llm-reply.js";

export type FakeLlmMessage =
  | { type: "ready"; url: string }
  | {
      type: "counts";
      calls: Record<string, number>;
      streamsOpen: number;
      /** When each call arrived and when its answer ended, in ms of process.hrtime (the runner's clock too). */
      arrivedMs: number[];
      endedMs: number[];
      /** This process's event-loop delay p99 (ms): a late fake would make every system look late. */
      loopDelayP99Ms: number;
    }
  | { type: "error"; message: string };
export type FakeLlmCommand = { type: "counts" } | { type: "reset" };

const [turnArg, shareArg, chunksArg] = process.argv.slice(2);
const turnMs = Number(turnArg);
const firstTokenMs = turnMs * Number(shareArg);
const chunkCount = Number(chunksArg);
const MODEL = "fake-model";

const calls = new Map<string, number>();
const arrivedMs: number[] = [];
const endedMs: number[] = [];
const loopDelay = monitorEventLoopDelay({ resolution: 10 });
loopDelay.enable();
let streamsOpen = 0;
const nowMs = (): number => Number(process.hrtime.bigint()) / 1e6;
let nextId = 0;

interface ChatRequest {
  stream?: boolean;
  stream_options?: { include_usage?: boolean };
  messages?: Array<{ role?: string; content?: unknown }>;
}

function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .map((part: unknown) => (typeof part === "object" && part !== null && (part as { type?: unknown }).type === "text" ? String((part as { text?: unknown }).text ?? "") : ""))
    .join("");
}

function lastUserText(request: ChatRequest): string {
  const messages = request.messages ?? [];
  for (let i = messages.length - 1; i >= 0; i--) if (messages[i].role === "user") return textOf(messages[i].content);
  return "";
}

function caller(req: IncomingMessage): string {
  const auth = req.headers.authorization ?? "";
  return auth.startsWith("Bearer ") ? auth.slice("Bearer ".length) : "(no key)";
}

function chunkLine(id: string, created: number, delta: string, finish: string | null): string {
  return `data: {"id":"${id}","object":"chat.completion.chunk","created":${created},"model":"${MODEL}","choices":[{"index":0,"delta":${delta},"finish_reason":${finish === null ? "null" : `"${finish}"`}}]}\n\n`;
}

function usage(reply: string, chunks: number): { prompt_tokens: number; completion_tokens: number; total_tokens: number } {
  const prompt = Math.ceil(reply.length / 4);
  return { prompt_tokens: prompt, completion_tokens: chunks, total_tokens: prompt + chunks };
}

function streamReply(res: ServerResponse, reply: string, includeUsage: boolean): void {
  const id = `chatcmpl-fake-${++nextId}`;
  const created = Math.floor(Date.now() / 1000);
  const chunks = splitChunks(reply, chunkCount);
  const stepMs = (turnMs - firstTokenMs) / chunks.length;
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  res.write(chunkLine(id, created, '{"role":"assistant","content":""}', null));
  streamsOpen += 1;
  let index = 0;
  let timer: NodeJS.Timeout | undefined;
  let open = true;
  const close = (): void => {
    if (!open) return;
    open = false;
    streamsOpen -= 1;
    clearTimeout(timer);
  };
  res.on("close", close);
  const step = (): void => {
    if (!open) return;
    if (index < chunks.length) {
      res.write(chunkLine(id, created, `{"content":${JSON.stringify(chunks[index])}}`, null));
      index += 1;
      timer = setTimeout(step, stepMs);
      return;
    }
    let tail = chunkLine(id, created, "{}", "stop");
    if (includeUsage) tail += `data: {"id":"${id}","object":"chat.completion.chunk","created":${created},"model":"${MODEL}","choices":[],"usage":${JSON.stringify(usage(reply, chunks.length))}}\n\n`;
    close();
    endedMs.push(nowMs());
    res.end(`${tail}data: [DONE]\n\n`);
  };
  timer = setTimeout(step, firstTokenMs);
}

function wholeReply(res: ServerResponse, reply: string): void {
  const timer = setTimeout(() => {
    const body = {
      id: `chatcmpl-fake-${++nextId}`,
      object: "chat.completion",
      created: Math.floor(Date.now() / 1000),
      model: MODEL,
      choices: [{ index: 0, message: { role: "assistant", content: reply }, finish_reason: "stop" }],
      usage: usage(reply, chunkCount),
    };
    endedMs.push(nowMs());
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(body));
  }, turnMs);
  res.on("close", () => clearTimeout(timer));
}

function fail(res: ServerResponse, status: number, message: string): void {
  res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify({ error: { message, type: "invalid_request_error" } }));
}

async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const parts: Buffer[] = [];
  for await (const part of req) parts.push(part as Buffer);
  // Any prefix before /chat/completions: the base URL may carry a path of its own.
  if (req.method !== "POST" || !(req.url ?? "").split("?")[0].endsWith("/chat/completions")) return fail(res, 404, "not found");
  let request: ChatRequest;
  try {
    request = JSON.parse(Buffer.concat(parts).toString("utf8")) as ChatRequest;
  } catch {
    return fail(res, 400, "the body is not JSON");
  }
  arrivedMs.push(nowMs());
  const who = caller(req);
  calls.set(who, (calls.get(who) ?? 0) + 1);
  const reply = fakeReply(lastUserText(request));
  if (request.stream === true) streamReply(res, reply, request.stream_options?.include_usage === true);
  else wholeReply(res, reply);
}

const server = createServer((req, res) => {
  handle(req, res).catch((err: Error) => {
    if (!res.headersSent) fail(res, 500, err.message);
    else res.destroy(err);
  });
});
// The gateways keep their connections between calls.
server.keepAliveTimeout = 60_000;
server.listen(0, "127.0.0.1", () => {
  const { port } = server.address() as AddressInfo;
  toParent<FakeLlmMessage>({ type: "ready", url: `http://127.0.0.1:${port}/v1` });
});

fromParent<FakeLlmCommand>((command) => {
  if (command.type === "reset") {
    calls.clear();
    arrivedMs.length = 0;
    endedMs.length = 0;
    loopDelay.reset();
  } else {
    const loopDelayP99Ms = loopDelay.percentile(99) / 1e6;
    toParent<FakeLlmMessage>({ type: "counts", calls: Object.fromEntries(calls), streamsOpen, arrivedMs, endedMs, loopDelayP99Ms });
  }
});

process.on("SIGTERM", () => {
  server.closeAllConnections();
  server.close(() => process.exit(0));
});
