// The Slack benchmark's peer: the bot users would build instead of running Switchboard — Vercel's
// Chat SDK (`chat`) with its Slack adapter (signed Events API webhooks) and ioredis state, hosted
// on node:http. A mention is answered with one chat.postMessage echoing its text, as the echo
// model answers. The SDK acknowledges the webhook before it handles the message (`waitUntil`):
// the handler runs in the background of the same process.
// It tells the runner what its queue strategy did with messages that arrived while a thread's
// handler ran: how many it queued, how many it skipped (of those waiting, only the latest is
// answered) and how many it never took off the queue (queued after the handler's last look at the
// queue, before it released the thread's lock), counted from the SDK's own log events.
// With BENCH_PEER_LLM_BASE_URL set (the LLM-bound benchmark), the handler asks an OpenAI-compatible
// model instead, streamed with the `openai` client, and posts the stream with `thread.post(stream)`
// as the SDK documents for AI replies.
// argv: redisUrl keyPrefix slackApiUrl; env: BENCH_SLACK_SIGNING_SECRET, BENCH_SLACK_BOT_TOKEN,
// and for the model BENCH_PEER_LLM_BASE_URL, BENCH_PEER_LLM_API_KEY, BENCH_PEER_LLM_MODEL
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { createSlackAdapter } from "@chat-adapter/slack";
import { createIoRedisState } from "@chat-adapter/state-ioredis";
import { Chat, ConsoleLogger, type Logger, type Message, type MessageContext, type StateAdapter, type Thread } from "chat";
import { Redis } from "ioredis";
import OpenAI from "openai";
import type { ChatCompletionChunk } from "openai/resources/chat/completions";
import { redisOptionsFromUrl } from "../../src/bus/redis-url.js";
import { fromParent, toParent } from "../lib/child.js";

export type PeerMessage =
  | { type: "ready"; eventsUrl: string }
  | { type: "stats"; queued: number; skipped: number; stranded: number }
  | { type: "error"; message: string };
export type PeerCommand = { type: "stats" };

const EVENTS_PATH = "/api/webhooks/slack";

const [redisUrl, keyPrefix, slackApiUrl] = process.argv.slice(2);
const signingSecret = process.env.BENCH_SLACK_SIGNING_SECRET ?? "";
const botToken = process.env.BENCH_SLACK_BOT_TOKEN ?? "";
const llmBaseUrl = process.env.BENCH_PEER_LLM_BASE_URL ?? "";
const llmModel = process.env.BENCH_PEER_LLM_MODEL ?? "";
const llm = llmBaseUrl ? new OpenAI({ baseURL: llmBaseUrl, apiKey: process.env.BENCH_PEER_LLM_API_KEY ?? "", organization: null, project: null }) : null;

const queue = { queued: 0, dequeued: 0, skipped: 0 };

/** Warnings and errors to stderr, like ConsoleLogger("warn"); the queue's info events counted. */
function countingLogger(inner: Logger = new ConsoleLogger("warn")): Logger {
  return {
    child: (prefix) => countingLogger(inner.child(prefix)),
    debug: () => undefined,
    info: (message) => {
      if (message === "message-queued") queue.queued += 1;
      else if (message === "message-dequeued") queue.dequeued += 1;
    },
    warn: (message, ...args) => inner.warn(message, ...args),
    error: (message, ...args) => inner.error(message, ...args),
  };
}

const client = new Redis({ ...redisOptionsFromUrl(redisUrl), maxRetriesPerRequest: 3 });
const bot = new Chat({
  userName: "bench-bot",
  adapters: {
    slack: createSlackAdapter({
      signingSecret,
      botToken,
      apiUrl: slackApiUrl,
      logger: new ConsoleLogger("warn"),
    }),
  },
  // state-ioredis 4.41.0 declares its types against its own copy of chat 4.41.0, whose classes
  // differ from 4.41.1's only in private members: the same interface at run time.
  state: createIoRedisState({ client, keyPrefix, logger: new ConsoleLogger("warn") }) as unknown as StateAdapter,
  // The documented choice for AI chat bots: a message that arrives while the thread's handler
  // runs waits for it instead of being dropped (the default).
  concurrency: "queue",
  logger: countingLogger(),
});

/** The mention as text, without the leading `@bot` the SDK renders the bot's `<@U…>` as. */
function withoutMention(text: string): string {
  return text.replace(/^\s*@\S+\s*/, "").trim();
}

async function echo(thread: Thread, message: Message, context?: MessageContext): Promise<void> {
  queue.skipped += context?.skipped.length ?? 0;
  await thread.post(`Echo: ${withoutMention(message.text)}`);
}

async function* textOf(stream: AsyncIterable<ChatCompletionChunk>): AsyncGenerator<string> {
  for await (const chunk of stream) {
    const text = chunk.choices[0]?.delta.content;
    if (text) yield text;
  }
}

async function askModel(model: OpenAI, thread: Thread, message: Message, context?: MessageContext): Promise<void> {
  queue.skipped += context?.skipped.length ?? 0;
  const stream = await model.chat.completions.create(
    { model: llmModel, messages: [{ role: "user", content: withoutMention(message.text) }], stream: true },
    { signal: thread.signal },
  );
  await thread.post(textOf(stream));
}

const handler = llm ? (thread: Thread, message: Message, context?: MessageContext) => askModel(llm, thread, message, context) : echo;
bot.onNewMention(handler);
bot.onSubscribedMessage(handler);

const background = (task: Promise<unknown>): void => {
  task.catch((err: Error) => console.error(`peer: handler failed: ${err.message}`));
};

async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  if (req.method !== "POST" || req.url !== EVENTS_PATH) {
    res.writeHead(404, { "content-type": "application/json" }).end(JSON.stringify({ error: "not found" }));
    return;
  }
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (typeof value === "string") headers.set(name, value);
  }
  const request = new Request(`http://${req.headers.host ?? "127.0.0.1"}${req.url}`, {
    method: "POST",
    headers,
    body: Buffer.concat(chunks),
  });
  const response = await bot.webhooks.slack(request, { waitUntil: background });
  const body = Buffer.from(await response.arrayBuffer());
  const responseHeaders: Record<string, string> = {};
  response.headers.forEach((value, name) => {
    responseHeaders[name] = value;
  });
  res.writeHead(response.status, responseHeaders);
  res.end(body);
}

const server = createServer((req, res) => {
  handle(req, res).catch((err: Error) => {
    res.writeHead(500, { "content-type": "application/json" }).end(JSON.stringify({ error: err.message }));
  });
});

await bot.initialize();
server.listen(0, "127.0.0.1", () => {
  const { port } = server.address() as AddressInfo;
  toParent<PeerMessage>({ type: "ready", eventsUrl: `http://127.0.0.1:${port}${EVENTS_PATH}` });
});

fromParent<PeerCommand>((command) => {
  if (command.type !== "stats") return;
  const taken = queue.dequeued + queue.skipped;
  toParent<PeerMessage>({ type: "stats", queued: queue.queued, skipped: queue.skipped, stranded: queue.queued - taken });
});

process.on("SIGTERM", () => {
  server.close();
  server.closeAllConnections();
  void bot
    .shutdown()
    .catch(() => undefined)
    .finally(() => {
      client.disconnect();
      process.exit(0);
    });
});
