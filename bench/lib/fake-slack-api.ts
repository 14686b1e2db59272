// A lean stand-in for Slack's Web API for the Slack benchmark, shared by both systems under test:
// checks the bot token the way Slack does (`Authorization: Bearer`, or a form `token`), answers
// the methods a mention bot calls (auth.test, users.info, conversations.info, chat.postMessage,
// chat.update, and the streaming chat.startStream / appendStream / stopStream; anything else
// `unknown_method`), counts every call by method and tells a listener
// about each message text it now shows, with the time it arrived (process.hrtime: the runner's
// clock). It keeps no call log, so a long run costs it no memory beyond the messages themselves.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export const FAKE_BOT_USER_ID = "U0BOT000001";
export const FAKE_BOT_ID = "B0BOT000001";
export const FAKE_TEAM_ID = "T0TEAM00001";

/** A message of the bot as the fake stores it. */
export interface BotMessage {
  channel: string;
  ts: string;
  /** The thread it was posted in (null for a top-level post). */
  threadTs: string | null;
  text: string;
}

export interface SlackApiListener {
  /** A new bot message (chat.postMessage). */
  posted(message: BotMessage, atNs: bigint): void;
  /** The text a bot message shows changed (chat.update). */
  edited(message: BotMessage, atNs: bigint): void;
}

type Answer = { status: number; body: Record<string, unknown> };

export class FakeSlackApi {
  private readonly counts = new Map<string, number>();
  private readonly messages = new Map<string, BotMessage>();
  private tsCounter = 0;
  /** Messages started with chat.startStream and not stopped yet. */
  private readonly streaming = new Set<string>();
  private listener: SlackApiListener | null = null;

  private constructor(
    private readonly server: Server,
    private readonly botToken: string,
  ) {}

  static async start(botToken: string): Promise<FakeSlackApi> {
    let fake: FakeSlackApi | null = null;
    const server = createServer((req, res) => {
      void fake?.handle(req, res);
    });
    // The clients keep their connections; Slack's do too.
    server.keepAliveTimeout = 60_000;
    fake = new FakeSlackApi(server, botToken);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    return fake;
  }

  /** Base URL of the Web API (method names are appended to it). */
  get url(): string {
    const { port } = this.server.address() as AddressInfo;
    return `http://127.0.0.1:${port}/api/`;
  }

  listen(listener: SlackApiListener | null): void {
    this.listener = listener;
  }

  /** Calls so far, by method (refused calls included). */
  callCounts(): Record<string, number> {
    return Object.fromEntries(this.counts);
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const atNs = process.hrtime.bigint();
    const method = (req.url ?? "").replace(/^\/api\//, "").replace(/\?.*$/, "");
    this.counts.set(method, (this.counts.get(method) ?? 0) + 1);
    const params = parseParams(Buffer.concat(chunks).toString("utf8"), req.headers["content-type"] ?? "");
    const answer = req.method === "POST" ? this.answer(method, params, req.headers.authorization ?? null, atNs) : fail("invalid_request");
    res.writeHead(answer.status, { "content-type": "application/json; charset=utf-8" });
    res.end(JSON.stringify(answer.body));
  }

  private answer(method: string, params: Record<string, string>, authorization: string | null, atNs: bigint): Answer {
    const token = authorization?.startsWith("Bearer ") ? authorization.slice("Bearer ".length) : params.token;
    if (!token) return fail("not_authed");
    if (token !== this.botToken) return fail("invalid_auth");
    switch (method) {
      case "auth.test":
        return ok({ url: "https://bench.slack.com/", team: "Bench", user: "bench-bot", team_id: FAKE_TEAM_ID, user_id: FAKE_BOT_USER_ID, bot_id: FAKE_BOT_ID });
      case "users.info": {
        if (!params.user) return fail("user_not_found");
        const name = params.user === FAKE_BOT_USER_ID ? "bench-bot" : `user-${params.user.toLowerCase()}`;
        return ok({ user: { id: params.user, name, real_name: name, is_bot: params.user === FAKE_BOT_USER_ID, profile: { display_name: name, real_name: name } } });
      }
      case "conversations.info":
        if (!params.channel) return fail("channel_not_found");
        return ok({ channel: { id: params.channel, name: `bench-${params.channel.toLowerCase()}`, is_channel: true } });
      case "chat.postMessage":
        return this.post(params, atNs);
      case "chat.update":
        return this.update(params, atNs);
      case "chat.startStream":
        return this.startStream(params, atNs);
      case "chat.appendStream":
        return this.appendStream(params, atNs, false);
      case "chat.stopStream":
        return this.appendStream(params, atNs, true);
      default:
        return fail("unknown_method");
    }
  }

  private post(params: Record<string, string>, atNs: bigint): Answer {
    if (!params.channel) return fail("channel_not_found");
    // The Chat SDK sends markdown as `markdown_text`; Slack takes either.
    const text = params.text ?? params.markdown_text ?? "";
    if (text === "" && !params.blocks) return fail("no_text");
    const message = this.create(params.channel, params.thread_ts || null, text);
    this.listener?.posted(message, atNs);
    return ok({ channel: params.channel, ts: message.ts, message: { type: "message", text, user: FAKE_BOT_USER_ID, bot_id: FAKE_BOT_ID, ts: message.ts } });
  }

  private create(channel: string, threadTs: string | null, text: string): BotMessage {
    this.tsCounter += 1;
    const ts = `${Math.floor(Date.now() / 1000)}.${String(this.tsCounter).padStart(6, "0")}`;
    const message: BotMessage = { channel, ts, threadTs, text };
    this.messages.set(`${channel}:${ts}`, message);
    return message;
  }

  /** A streamed message (Slack's agent streaming): shown at once, its text appended to until stopped. */
  private startStream(params: Record<string, string>, atNs: bigint): Answer {
    if (!params.channel) return fail("channel_not_found");
    if (!params.thread_ts) return fail("invalid_arguments");
    const message = this.create(params.channel, params.thread_ts, streamedText(params));
    this.streaming.add(`${message.channel}:${message.ts}`);
    this.listener?.posted(message, atNs);
    return ok({ channel: message.channel, ts: message.ts });
  }

  private appendStream(params: Record<string, string>, atNs: bigint, stop: boolean): Answer {
    const key = `${params.channel}:${params.ts}`;
    const message = this.messages.get(key);
    if (!message) return fail("message_not_found");
    if (!this.streaming.has(key)) return fail("message_not_in_streaming_state");
    const text = streamedText(params);
    if (stop) this.streaming.delete(key);
    if (text !== "") {
      message.text += text;
      this.listener?.edited(message, atNs);
    }
    return ok({ channel: message.channel, ts: message.ts, ...(stop ? { message: { type: "message", text: message.text, user: FAKE_BOT_USER_ID, bot_id: FAKE_BOT_ID, ts: message.ts } } : {}) });
  }

  private update(params: Record<string, string>, atNs: bigint): Answer {
    const message = this.messages.get(`${params.channel}:${params.ts}`);
    if (!message) return fail("message_not_found");
    const text = params.text ?? params.markdown_text ?? "";
    if (text === "" && !params.blocks) return fail("no_text");
    message.text = text;
    this.listener?.edited(message, atNs);
    return ok({ channel: message.channel, ts: message.ts, text });
  }
}

function ok(body: Record<string, unknown>): Answer {
  return { status: 200, body: { ok: true, ...body } };
}

function fail(error: string): Answer {
  return { status: 200, body: { ok: false, error } };
}

/** The text a streaming call adds: `markdown_text`, or its `chunks` of type markdown_text. */
function streamedText(params: Record<string, string>): string {
  let text = params.markdown_text ?? "";
  if (!params.chunks) return text;
  try {
    const chunks = JSON.parse(params.chunks) as unknown;
    if (Array.isArray(chunks)) {
      for (const chunk of chunks as Array<{ type?: unknown; text?: unknown }>) if (chunk.type === "markdown_text" && typeof chunk.text === "string") text += chunk.text;
    }
  } catch {
    // Not JSON: no chunks.
  }
  return text;
}

function parseParams(raw: string, contentType: string): Record<string, string> {
  if (raw === "") return {};
  if (contentType.startsWith("application/json")) {
    try {
      const json = JSON.parse(raw) as Record<string, unknown>;
      return Object.fromEntries(Object.entries(json).map(([k, v]) => [k, typeof v === "string" ? v : JSON.stringify(v)]));
    } catch {
      return {};
    }
  }
  return Object.fromEntries(new URLSearchParams(raw));
}
