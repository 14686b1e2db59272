// A local stand-in for Discord's REST API: channel messages (create, edit, typing) with
// `Authorization: Bot <token>`, interaction follow-ups on /webhooks/:app/:token (no auth, as on
// Discord), the 2000-character content limit (400 otherwise), and 429 with retry_after on demand.
// With a gateway address, GET /gateway/bot (bot auth) points a gateway client at it.
// Attachments: a CDN on the same server serves files at signed URLs (ex/is/hm query, as Discord's
// are); an unsigned, tampered or expired URL gets 404, and no token is needed or expected.
import { createHmac, randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export interface FakeDiscordCall {
  method: string;
  /** Path after the API root, e.g. `/channels/123/messages` (tokens included). */
  path: string;
  authorization: string | null;
  body: Record<string, unknown> | null;
  status: number;
}

export interface FakeDiscordMessage {
  id: string;
  channel_id: string;
  content: string;
  message_reference: { message_id: string } | null;
  /** 'bot' for channel messages, 'webhook' for interaction follow-ups. */
  via: "bot" | "webhook";
  interaction_token: string | null;
  history: string[];
}

export interface FakeDiscordOptions {
  botToken: string;
  botUserId?: string;
  applicationId?: string;
  /** When set, other channels answer 404 Unknown Channel. */
  channels?: string[];
  /** The gateway GET /gateway/bot hands out; without it that route answers 404. */
  gatewayUrl?: string;
}

type Answer = { status: number; body: unknown; headers?: Record<string, string> };

/** An attachment as a MESSAGE_CREATE carries it. */
export interface FakeDiscordAttachment {
  id: string;
  filename: string;
  size: number;
  url: string;
  proxy_url: string;
  content_type: string;
}

export interface FakeCdnDownload {
  path: string;
  authorization: string | null;
  served: boolean;
}

const DISCORD_EPOCH = 1420070400000n;

export class FakeDiscord {
  readonly calls: FakeDiscordCall[] = [];
  readonly messages = new Map<string, FakeDiscordMessage>();
  readonly typing: string[] = [];
  private rateLimits: Array<{ count: number; retryAfterSeconds: number; global: boolean; skip: number }> = [];
  private expiredTokens = new Set<string>();
  readonly cdnDownloads: FakeCdnDownload[] = [];
  private readonly cdnFiles = new Map<string, { data: Buffer; contentType: string }>();
  private readonly cdnRedirects = new Map<string, string>();
  private readonly cdnKey = randomBytes(16);
  private sequence = 0n;

  private constructor(
    private readonly server: Server,
    private readonly options: FakeDiscordOptions & { botUserId: string },
  ) {}

  static async start(options: FakeDiscordOptions): Promise<FakeDiscord> {
    let fake: FakeDiscord | null = null;
    const server = createServer((req, res) => {
      void fake?.handle(req, res);
    });
    fake = new FakeDiscord(server, { botUserId: "1100000000000000001", ...options });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    return fake;
  }

  /** API root, as DISCORD_API_URL. */
  get url(): string {
    const { port } = this.server.address() as AddressInfo;
    return `http://127.0.0.1:${port}/api/v10`;
  }

  /**
   * The next `count` requests (after letting `afterRequests` through) answer 429 with
   * `retry_after: retryAfterSeconds`.
   */
  rateLimitNext(
    count: number,
    retryAfterSeconds: number,
    options: { global?: boolean; afterRequests?: number } = {},
  ): void {
    this.rateLimits.push({
      count,
      retryAfterSeconds,
      global: options.global ?? false,
      skip: options.afterRequests ?? 0,
    });
  }

  /** Follow-ups with this interaction token answer 404 Unknown Webhook (tokens live 15 minutes). */
  expireInteractionToken(token: string): void {
    this.expiredTokens.add(token);
  }

  /** A file posted in `channelId`: its attachment object, with a signed CDN URL valid for `ttlSeconds`. */
  addAttachment(channelId: string, filename: string, data: Buffer, contentType: string, ttlSeconds = 86_400): FakeDiscordAttachment {
    const id = this.snowflake();
    const path = `/attachments/${channelId}/${id}/${encodeURIComponent(filename)}`;
    this.cdnFiles.set(path, { data, contentType });
    const now = Math.floor(Date.now() / 1000);
    const ex = (now + ttlSeconds).toString(16);
    const is = now.toString(16);
    const { port } = this.server.address() as AddressInfo;
    const url = `http://127.0.0.1:${port}${path}?ex=${ex}&is=${is}&hm=${this.cdnSignature(path, ex, is)}&`;
    return { id, filename, size: data.length, url, proxy_url: url, content_type: contentType };
  }

  /** An attachment whose signed CDN URL answers 302 to `location`. */
  addRedirectingAttachment(channelId: string, filename: string, location: string, contentType: string): FakeDiscordAttachment {
    const attachment = this.addAttachment(channelId, filename, Buffer.alloc(0), contentType);
    this.cdnRedirects.set(new URL(attachment.url).pathname, location);
    return attachment;
  }

  messagesIn(channelId: string): FakeDiscordMessage[] {
    return [...this.messages.values()].filter((m) => m.channel_id === channelId);
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private cdnSignature(path: string, ex: string, is: string): string {
    return createHmac("sha256", this.cdnKey).update(`${path}:${ex}:${is}`).digest("hex");
  }

  private serveCdn(req: IncomingMessage, res: ServerResponse, url: URL): void {
    const file = this.cdnFiles.get(url.pathname);
    const ex = url.searchParams.get("ex") ?? "";
    const is = url.searchParams.get("is") ?? "";
    const signed = url.searchParams.get("hm") === this.cdnSignature(url.pathname, ex, is);
    const fresh = parseInt(ex, 16) * 1000 > Date.now();
    const served = Boolean(file && signed && fresh);
    this.cdnDownloads.push({ path: url.pathname, authorization: req.headers.authorization ?? null, served });
    if (!served || !file) {
      res.writeHead(404, { "content-type": "text/plain" });
      res.end("This content is no longer available.");
      return;
    }
    const redirect = this.cdnRedirects.get(url.pathname);
    if (redirect) {
      res.writeHead(302, { location: redirect });
      res.end();
      return;
    }
    res.writeHead(200, { "content-type": file.contentType, "content-length": file.data.length });
    res.end(file.data);
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const requested = new URL(req.url ?? "/", "http://localhost");
    if (req.method === "GET" && requested.pathname.startsWith("/attachments/")) return this.serveCdn(req, res, requested);
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks).toString("utf8");
    const path = new URL(req.url ?? "/", "http://localhost").pathname.replace(/^\/api\/v10/, "");
    const method = req.method ?? "GET";
    let body: Record<string, unknown> | null = null;
    let answer: Answer;
    try {
      body = raw === "" ? null : (JSON.parse(raw) as Record<string, unknown>);
      answer = this.answer(method, path, req.headers.authorization ?? null, body);
    } catch {
      answer = { status: 400, body: { message: "400: Bad Request", code: 50109 } };
    }
    this.calls.push({ method, path, authorization: req.headers.authorization ?? null, body, status: answer.status });
    if (answer.status === 204) {
      res.writeHead(204, answer.headers);
      res.end();
      return;
    }
    res.writeHead(answer.status, { "content-type": "application/json", ...answer.headers });
    res.end(JSON.stringify(answer.body));
  }

  private answer(method: string, path: string, authorization: string | null, body: Record<string, unknown> | null): Answer {
    const limit = this.rateLimits[0];
    if (limit && limit.skip > 0) {
      limit.skip -= 1;
    } else if (limit) {
      if (--limit.count <= 0) this.rateLimits.shift();
      return {
        status: 429,
        headers: {
          "retry-after": String(Math.ceil(limit.retryAfterSeconds)),
          "x-ratelimit-reset-after": String(limit.retryAfterSeconds),
          "x-ratelimit-scope": limit.global ? "global" : "user",
          ...(limit.global ? { "x-ratelimit-global": "true" } : {}),
        },
        body: { message: "You are being rate limited.", retry_after: limit.retryAfterSeconds, global: limit.global },
      };
    }
    let match: RegExpExecArray | null;
    if (path === "/gateway/bot" && method === "GET" && this.options.gatewayUrl) {
      const gatewayUrl = this.options.gatewayUrl;
      return this.withBot(authorization, () => ({
        status: 200,
        body: {
          url: gatewayUrl,
          shards: 1,
          session_start_limit: { total: 1000, remaining: 999, reset_after: 86_400_000, max_concurrency: 1 },
        },
      }));
    }
    if ((match = /^\/channels\/(\d+)\/messages$/.exec(path)) && method === "POST") {
      return this.withBot(authorization, () => this.createChannelMessage(match![1], body));
    }
    if ((match = /^\/channels\/(\d+)\/messages\/(\d+)$/.exec(path)) && method === "PATCH") {
      return this.withBot(authorization, () => this.editMessage(match![1], match![2], body, null));
    }
    if ((match = /^\/channels\/(\d+)\/typing$/.exec(path)) && method === "POST") {
      return this.withBot(authorization, () => {
        const unknown = this.unknownChannel(match![1]);
        if (unknown) return unknown;
        this.typing.push(match![1]);
        return { status: 204, body: null };
      });
    }
    if ((match = /^\/webhooks\/(\d+)\/([^/]+)$/.exec(path)) && method === "POST") {
      const webhookError = this.webhookError(match[1], match[2]);
      return webhookError ?? this.createFollowUp(match[2], body);
    }
    if ((match = /^\/webhooks\/(\d+)\/([^/]+)\/messages\/(\d+)$/.exec(path)) && method === "PATCH") {
      const webhookError = this.webhookError(match[1], match[2]);
      if (webhookError) return webhookError;
      const existing = this.messages.get(match[3]);
      return this.editMessage(existing?.channel_id ?? "", match[3], body, match[2]);
    }
    return { status: 404, body: { message: "404: Not Found", code: 0 } };
  }

  private withBot(authorization: string | null, then: () => Answer): Answer {
    if (authorization !== `Bot ${this.options.botToken}`) {
      return { status: 401, body: { message: "401: Unauthorized", code: 0 } };
    }
    return then();
  }

  private unknownChannel(channelId: string): Answer | null {
    if (this.options.channels && !this.options.channels.includes(channelId)) {
      return { status: 404, body: { message: "Unknown Channel", code: 10003 } };
    }
    return null;
  }

  private webhookError(applicationId: string, token: string): Answer | null {
    const wrongApp = this.options.applicationId !== undefined && applicationId !== this.options.applicationId;
    if (wrongApp || this.expiredTokens.has(token)) {
      return { status: 404, body: { message: "Unknown Webhook", code: 10015 } };
    }
    return null;
  }

  private contentError(body: Record<string, unknown> | null): Answer | null {
    const content = body?.content;
    if (content !== undefined && typeof content !== "string") return invalidForm("content", "Must be a string.");
    if (typeof content === "string" && content.length > 2000) {
      return invalidForm("content", "Must be 2000 or fewer in length.", "BASE_TYPE_MAX_LENGTH");
    }
    if (!content && !body?.embeds) return { status: 400, body: { message: "Cannot send an empty message", code: 50006 } };
    return null;
  }

  private createChannelMessage(channelId: string, body: Record<string, unknown> | null): Answer {
    const unknown = this.unknownChannel(channelId);
    if (unknown) return unknown;
    const contentError = this.contentError(body);
    if (contentError) return contentError;
    const reference = body?.message_reference as { message_id?: string } | undefined;
    return this.store({
      channel_id: channelId,
      content: String(body?.content ?? ""),
      message_reference: reference?.message_id ? { message_id: reference.message_id } : null,
      via: "bot",
      interaction_token: null,
    });
  }

  private createFollowUp(token: string, body: Record<string, unknown> | null): Answer {
    const contentError = this.contentError(body);
    if (contentError) return contentError;
    return this.store({
      channel_id: "0",
      content: String(body?.content ?? ""),
      message_reference: null,
      via: "webhook",
      interaction_token: token,
    });
  }

  private editMessage(channelId: string, id: string, body: Record<string, unknown> | null, token: string | null): Answer {
    const message = this.messages.get(id);
    if (!message || message.channel_id !== channelId || (token !== null && message.interaction_token !== token)) {
      return { status: 404, body: { message: "Unknown Message", code: 10008 } };
    }
    const contentError = this.contentError(body);
    if (contentError) return contentError;
    message.history.push(message.content);
    message.content = String(body?.content ?? "");
    return { status: 200, body: this.wire(message) };
  }

  private store(fields: Omit<FakeDiscordMessage, "id" | "history">): Answer {
    const id = this.snowflake();
    const message: FakeDiscordMessage = { id, history: [], ...fields };
    this.messages.set(id, message);
    return { status: 200, body: this.wire(message) };
  }

  private wire(message: FakeDiscordMessage): Record<string, unknown> {
    return {
      id: message.id,
      type: message.message_reference ? 19 : 0,
      channel_id: message.channel_id,
      content: message.content,
      author: { id: this.options.botUserId, username: "switchboard", bot: true, discriminator: "0" },
      timestamp: new Date().toISOString(),
      ...(message.message_reference ? { message_reference: message.message_reference } : {}),
    };
  }

  private snowflake(): string {
    this.sequence += 1n;
    return String(((BigInt(Date.now()) - DISCORD_EPOCH) << 22n) | (this.sequence & 0xfffn));
  }
}

function invalidForm(field: string, message: string, code = "BASE_TYPE_BAD"): Answer {
  return {
    status: 400,
    body: { code: 50035, message: "Invalid Form Body", errors: { [field]: { _errors: [{ code, message }] } } },
  };
}
