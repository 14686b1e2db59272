// A local stand-in for Slack's Web API (auth.test, chat.postMessage, chat.update) that checks
// requests the way Slack does: form or JSON bodies, the bot token as `Authorization: Bearer`
// (or a form `token`), `{ok:false,error}` answers, 429 with Retry-After on demand.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export interface FakeSlackCall {
  method: string;
  params: Record<string, string>;
  authorization: string | null;
  contentType: string | null;
  /** HTTP status answered (200 even for `ok:false`, as Slack does). */
  status: number;
  error: string | null;
}

export interface FakeSlackMessage {
  channel: string;
  ts: string;
  text: string;
  thread_ts: string | null;
  metadata: unknown;
  /** Texts this message had before each chat.update, oldest first. */
  history: string[];
}

export interface FakeSlackOptions {
  botToken: string;
  botUserId?: string;
  botId?: string;
  teamId?: string;
  /** When set, other channels answer `channel_not_found`. */
  channels?: string[];
}

type Answer = { status: number; body: Record<string, unknown>; headers?: Record<string, string> };

export class FakeSlack {
  readonly calls: FakeSlackCall[] = [];
  readonly messages = new Map<string, FakeSlackMessage>();
  private rateLimits: Array<{ count: number; retryAfterSeconds: number }> = [];
  private failures: Array<{ count: number; error: string }> = [];
  private tsCounter = 0;

  private constructor(
    private readonly server: Server,
    private readonly options: Required<Omit<FakeSlackOptions, "channels">> & { channels?: string[] },
  ) {}

  static async start(options: FakeSlackOptions): Promise<FakeSlack> {
    const full = {
      botUserId: "U0BOT000001",
      botId: "B0BOT000001",
      teamId: "T0TEAM00001",
      ...options,
    };
    let fake: FakeSlack | null = null;
    const server = createServer((req, res) => {
      void fake?.handle(req, res);
    });
    fake = new FakeSlack(server, full);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    return fake;
  }

  /** Base URL for WebClient's `slackApiUrl`. */
  get url(): string {
    const { port } = this.server.address() as AddressInfo;
    return `http://127.0.0.1:${port}/api/`;
  }

  /** The next `count` calls answer 429 with `Retry-After: retryAfterSeconds`. */
  rateLimitNext(count: number, retryAfterSeconds: number): void {
    this.rateLimits.push({ count, retryAfterSeconds });
  }

  /** The next `count` calls answer `{ok:false, error}`. */
  failNext(count: number, error: string): void {
    this.failures.push({ count, error });
  }

  callsTo(method: string): FakeSlackCall[] {
    return this.calls.filter((call) => call.method === method);
  }

  messagesIn(channel: string): FakeSlackMessage[] {
    return [...this.messages.values()].filter((m) => m.channel === channel);
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const raw = await readBody(req);
    const url = new URL(req.url ?? "/", "http://localhost");
    const method = url.pathname.replace(/^\/api\//, "");
    const contentType = req.headers["content-type"] ?? null;
    const params = parseParams(raw, contentType);
    const authorization = req.headers.authorization ?? null;
    const answer = req.method === "POST" ? this.answer(method, params, authorization) : fail("invalid_request");
    this.calls.push({
      method,
      params,
      authorization,
      contentType,
      status: answer.status,
      error: answer.body.ok === false ? String(answer.body.error) : null,
    });
    res.writeHead(answer.status, { "content-type": "application/json; charset=utf-8", ...answer.headers });
    res.end(JSON.stringify(answer.body));
  }

  private answer(method: string, params: Record<string, string>, authorization: string | null): Answer {
    const limit = this.rateLimits[0];
    if (limit) {
      if (--limit.count <= 0) this.rateLimits.shift();
      return {
        status: 429,
        headers: { "retry-after": String(limit.retryAfterSeconds) },
        body: { ok: false, error: "ratelimited" },
      };
    }
    if (params.__invalid_json) return fail("invalid_json");
    const token = authorization?.startsWith("Bearer ") ? authorization.slice("Bearer ".length) : params.token;
    if (!token) return fail("not_authed");
    if (token !== this.options.botToken) return fail("invalid_auth");
    const failure = this.failures[0];
    if (failure) {
      if (--failure.count <= 0) this.failures.shift();
      return fail(failure.error);
    }
    switch (method) {
      case "auth.test":
        return ok({
          url: "https://example-team.slack.com/",
          team: "Example Team",
          user: "switchboard",
          team_id: this.options.teamId,
          user_id: this.options.botUserId,
          bot_id: this.options.botId,
          is_enterprise_install: false,
        });
      case "chat.postMessage":
        return this.postMessage(params);
      case "chat.update":
        return this.update(params);
      default:
        return fail("unknown_method");
    }
  }

  private channelError(channel: string | undefined): Answer | null {
    if (!channel) return fail("channel_not_found");
    if (this.options.channels && !this.options.channels.includes(channel)) return fail("channel_not_found");
    return null;
  }

  private postMessage(params: Record<string, string>): Answer {
    const channelError = this.channelError(params.channel);
    if (channelError) return channelError;
    if (!params.text && !params.blocks && !params.attachments) return fail("no_text");
    if ((params.text ?? "").length > 40_000) return fail("msg_too_long");
    let metadata: unknown = null;
    if (params.metadata) {
      try {
        metadata = JSON.parse(params.metadata);
      } catch {
        return fail("invalid_metadata_format");
      }
    }
    const ts = this.nextTs();
    const message: FakeSlackMessage = {
      channel: params.channel,
      ts,
      text: params.text ?? "",
      thread_ts: params.thread_ts ?? null,
      metadata,
      history: [],
    };
    this.messages.set(`${params.channel}:${ts}`, message);
    return ok({ channel: params.channel, ts, message: this.wire(message) });
  }

  private update(params: Record<string, string>): Answer {
    const channelError = this.channelError(params.channel);
    if (channelError) return channelError;
    if (!params.ts) return fail("message_not_found");
    const message = this.messages.get(`${params.channel}:${params.ts}`);
    if (!message) return fail("message_not_found");
    if (!params.text && !params.blocks) return fail("no_text");
    message.history.push(message.text);
    message.text = params.text ?? "";
    return ok({ channel: message.channel, ts: message.ts, text: message.text, message: this.wire(message) });
  }

  private wire(message: FakeSlackMessage): Record<string, unknown> {
    return {
      type: "message",
      text: message.text,
      user: this.options.botUserId,
      bot_id: this.options.botId,
      ts: message.ts,
      ...(message.thread_ts ? { thread_ts: message.thread_ts } : {}),
    };
  }

  private nextTs(): string {
    this.tsCounter += 1;
    return `${Math.floor(Date.now() / 1000)}.${String(this.tsCounter).padStart(6, "0")}`;
  }
}

function ok(body: Record<string, unknown>): Answer {
  return { status: 200, body: { ok: true, ...body } };
}

function fail(error: string): Answer {
  return { status: 200, body: { ok: false, error } };
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

function parseParams(raw: string, contentType: string | null): Record<string, string> {
  if (raw === "") return {};
  if (contentType?.startsWith("application/json")) {
    let json: Record<string, unknown>;
    try {
      json = JSON.parse(raw) as Record<string, unknown>;
    } catch {
      return { __invalid_json: "1" };
    }
    return Object.fromEntries(
      Object.entries(json).map(([k, v]) => [k, typeof v === "string" ? v : JSON.stringify(v)]),
    );
  }
  return Object.fromEntries(new URLSearchParams(raw));
}
