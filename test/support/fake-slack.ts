// A local stand-in for Slack's Web API (auth.test, chat.postMessage, chat.update) that checks
// requests the way Slack does: form or JSON bodies, the bot token as `Authorization: Bearer`
// (or a form `token`), `{ok:false,error}` answers, 429 with Retry-After on demand.
//
// Socket Mode too: apps.connections.open takes only the app-level token and answers a one-time
// ws:// URL on this same server, whose connections get `hello`, then whatever envelopes the test
// pushes; every message a client sends back is recorded as an acknowledgement.
import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Duplex } from "node:stream";
import { WebSocket, WebSocketServer } from "ws";

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

/** A file as Slack lists it in a message event's `files[]`. */
export interface FakeSlackFile {
  id: string;
  name: string;
  mimetype: string;
  filetype: string;
  size: number;
  url_private: string;
  url_private_download: string;
  mode: "hosted";
  is_external: false;
}

export interface FakeFileDownload {
  path: string;
  authorization: string | null;
  /** 'file' when the bytes were served; 'login' for Slack's sign-in page (no or a wrong token). */
  served: "file" | "login" | "missing" | "redirect";
}

export interface FakeSocketConnection {
  /** 1 for the first connection, counting up. */
  index: number;
  socket: WebSocket;
  open: boolean;
}

export interface FakeSocketAck {
  envelopeId: string;
  payload: unknown;
  /** The connection it came over. */
  connection: number;
}

export interface FakeEnvelopeOptions {
  retryAttempt?: number;
  retryReason?: string;
}

export interface FakeSlackOptions {
  botToken: string;
  /** The app-level token apps.connections.open takes (default: a fixed `xapp-` token). */
  appToken?: string;
  appId?: string;
  botUserId?: string;
  botId?: string;
  teamId?: string;
  /** When set, other channels answer `channel_not_found`. */
  channels?: string[];
}

export const FAKE_APP_TOKEN = "xapp-1-A0APP000001-4406285312345-6f1b2c3d4e5f60718293a4b5c6d7e8f9";

type Answer = { status: number; body: Record<string, unknown>; headers?: Record<string, string> };

export class FakeSlack {
  readonly calls: FakeSlackCall[] = [];
  readonly messages = new Map<string, FakeSlackMessage>();
  private rateLimits: Array<{ count: number; retryAfterSeconds: number; channel?: string }> = [];
  private failures: Array<{ count: number; error: string }> = [];
  readonly socketConnections: FakeSocketConnection[] = [];
  readonly fileDownloads: FakeFileDownload[] = [];
  private readonly files = new Map<string, { file: FakeSlackFile; data: Buffer; redirectTo?: string }>();
  readonly acks: FakeSocketAck[] = [];
  private readonly ackListeners: Array<(ack: FakeSocketAck) => void> = [];
  private readonly tickets = new Set<string>();
  private readonly sockets = new WebSocketServer({ noServer: true });
  private tsCounter = 0;
  private envelopeCounter = 0;
  private socketsToRefuse = 0;
  /** WebSocket upgrades answered 401. */
  refusedSockets = 0;

  private constructor(
    private readonly server: Server,
    private readonly options: Required<Omit<FakeSlackOptions, "channels">> & { channels?: string[] },
  ) {
    server.on("upgrade", (req, socket, head) => this.upgrade(req, socket, head));
  }

  static async start(options: FakeSlackOptions): Promise<FakeSlack> {
    const full = {
      botUserId: "U0BOT000001",
      botId: "B0BOT000001",
      teamId: "T0TEAM00001",
      appToken: FAKE_APP_TOKEN,
      appId: "A0APP000001",
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

  /** The next `count` calls (to `channel`, when given) answer 429 with `Retry-After: retryAfterSeconds`. */
  rateLimitNext(count: number, retryAfterSeconds: number, channel?: string): void {
    this.rateLimits.push({ count, retryAfterSeconds, channel });
  }

  /** The next `count` calls answer `{ok:false, error}`. */
  failNext(count: number, error: string): void {
    this.failures.push({ count, error });
  }

  /**
   * A file uploaded to the workspace: served at its `url_private` with the bot token only; without
   * it, Slack answers 200 with its sign-in page (HTML), as the real one does.
   */
  addFile(name: string, data: Buffer, mimetype: string): FakeSlackFile {
    const id = `F0${randomUUID().replace(/-/g, "").slice(0, 9).toUpperCase()}`;
    const { port } = this.server.address() as AddressInfo;
    const url = `http://127.0.0.1:${port}/files-pri/${this.options.teamId}-${id}/${encodeURIComponent(name)}`;
    const file: FakeSlackFile = {
      id,
      name,
      mimetype,
      filetype: name.split(".").pop() ?? "bin",
      size: data.length,
      url_private: url,
      url_private_download: `${url}?download=1`,
      mode: "hosted",
      is_external: false,
    };
    this.files.set(new URL(url).pathname, { file, data });
    return file;
  }

  /** A file whose `url_private` answers 302 to `location` (with the bot token, as for any file). */
  addRedirectingFile(name: string, location: string, mimetype: string): FakeSlackFile {
    const file = this.addFile(name, Buffer.alloc(0), mimetype);
    const stored = this.files.get(new URL(file.url_private).pathname);
    if (stored) stored.redirectTo = location;
    return file;
  }

  callsTo(method: string): FakeSlackCall[] {
    return this.calls.filter((call) => call.method === method);
  }

  messagesIn(channel: string): FakeSlackMessage[] {
    return [...this.messages.values()].filter((m) => m.channel === channel);
  }

  /** The connection envelopes go to: the newest one still open. */
  get currentSocket(): FakeSocketConnection | null {
    return this.socketConnections.findLast((c) => c.open) ?? null;
  }

  /** Pushes an envelope over the current connection; returns its envelope_id. */
  sendEnvelope(type: string, payload: unknown, options: FakeEnvelopeOptions = {}): string {
    const connection = this.currentSocket;
    if (!connection) throw new Error("no open Socket Mode connection");
    this.envelopeCounter += 1;
    const envelopeId = `${randomUUID()}-${this.envelopeCounter}`;
    const envelope: Record<string, unknown> = { envelope_id: envelopeId, payload, type, accepts_response_payload: type !== "events_api" };
    if (type === "events_api") {
      envelope.retry_attempt = options.retryAttempt ?? 0;
      envelope.retry_reason = options.retryReason ?? "";
    }
    connection.socket.send(JSON.stringify(envelope));
    return envelopeId;
  }

  /** An Events API body (as posted over HTTP) pushed as an `events_api` envelope. */
  sendEventCallback(body: string, options: FakeEnvelopeOptions = {}): string {
    return this.sendEnvelope("events_api", JSON.parse(body), options);
  }

  /** Slack's notice that the client should open a new connection (this one closes soon). */
  requestSocketRefresh(): void {
    const connection = this.currentSocket;
    if (!connection) throw new Error("no open Socket Mode connection");
    connection.socket.send(JSON.stringify({ type: "disconnect", reason: "refresh_requested", debug_info: { host: "fake-applink" } }));
  }

  /** Closes the current connection from the server's side: a close frame, or the TCP connection cut. */
  dropSocket(how: "close" | "terminate" = "close"): void {
    const connection = this.currentSocket;
    if (!connection) throw new Error("no open Socket Mode connection");
    if (how === "close") connection.socket.close(1001, "server going away");
    else connection.socket.terminate();
  }

  /** The next `count` WebSocket upgrades are refused with 401 (their tickets are used up all the same). */
  refuseNextSockets(count: number): void {
    this.socketsToRefuse += count;
  }

  ackOf(envelopeId: string): FakeSocketAck | undefined {
    return this.acks.find((ack) => ack.envelopeId === envelopeId);
  }

  /** Called with each acknowledgement as it arrives, before any other I/O is handled. */
  onAck(listener: (ack: FakeSocketAck) => void): void {
    this.ackListeners.push(listener);
  }

  async close(): Promise<void> {
    for (const connection of this.socketConnections) connection.socket.terminate();
    await new Promise<void>((resolve) => this.sockets.close(() => resolve()));
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    const url = new URL(req.url ?? "/", "http://localhost");
    const ticket = url.searchParams.get("ticket");
    // Tickets are single use, as Slack's are.
    const known = url.pathname === "/link/" && ticket !== null && this.tickets.delete(ticket);
    const refused = this.socketsToRefuse > 0;
    if (refused) this.socketsToRefuse -= 1;
    if (!known || refused) {
      this.refusedSockets += 1;
      socket.end("HTTP/1.1 401 Unauthorized\r\nconnection: close\r\ncontent-length: 0\r\n\r\n");
      return;
    }
    this.sockets.handleUpgrade(req, socket, head, (ws) => this.accept(ws));
  }

  private accept(socket: WebSocket): void {
    const connection: FakeSocketConnection = { index: this.socketConnections.length + 1, socket, open: true };
    this.socketConnections.push(connection);
    socket.on("close", () => {
      connection.open = false;
    });
    socket.on("error", () => undefined);
    socket.on("message", (data, isBinary) => {
      if (isBinary) return;
      let message: { envelope_id?: unknown; payload?: unknown };
      try {
        message = JSON.parse(String(data)) as { envelope_id?: unknown; payload?: unknown };
      } catch {
        return;
      }
      if (typeof message.envelope_id !== "string") return;
      const ack: FakeSocketAck = { envelopeId: message.envelope_id, payload: message.payload ?? null, connection: connection.index };
      this.acks.push(ack);
      for (const listener of this.ackListeners) listener(ack);
    });
    socket.send(
      JSON.stringify({
        type: "hello",
        num_connections: this.socketConnections.filter((c) => c.open).length,
        debug_info: { host: "fake-applink", approximate_connection_time: 18_060 },
        connection_info: { app_id: this.options.appId },
      }),
    );
  }

  private serveFile(req: IncomingMessage, res: ServerResponse, path: string): void {
    const authorization = req.headers.authorization ?? null;
    const stored = this.files.get(path);
    if (!stored) {
      this.fileDownloads.push({ path, authorization, served: "missing" });
      res.writeHead(404, { "content-type": "text/html; charset=utf-8" });
      res.end("<html><body>File not found</body></html>");
      return;
    }
    if (authorization !== `Bearer ${this.options.botToken}`) {
      this.fileDownloads.push({ path, authorization, served: "login" });
      res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
      res.end("<!DOCTYPE html><html><head><title>Slack</title></head><body>Sign in to your workspace</body></html>");
      return;
    }
    if (stored.redirectTo) {
      this.fileDownloads.push({ path, authorization, served: "redirect" });
      res.writeHead(302, { location: stored.redirectTo });
      res.end();
      return;
    }
    this.fileDownloads.push({ path, authorization, served: "file" });
    res.writeHead(200, { "content-type": stored.file.mimetype, "content-length": stored.data.length });
    res.end(stored.data);
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const raw = await readBody(req);
    const url = new URL(req.url ?? "/", "http://localhost");
    if (req.method === "GET" && url.pathname.startsWith("/files-pri/")) return this.serveFile(req, res, url.pathname);
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
    if (limit && (limit.channel === undefined || limit.channel === params.channel)) {
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
    // apps.connections.open takes only the app-level token; every other method only the bot token.
    const appMethod = method === "apps.connections.open";
    const other = appMethod ? this.options.botToken : this.options.appToken;
    if (token === other) return fail("not_allowed_token_type");
    if (token !== (appMethod ? this.options.appToken : this.options.botToken)) return fail("invalid_auth");
    const failure = this.failures[0];
    if (failure) {
      if (--failure.count <= 0) this.failures.shift();
      return fail(failure.error);
    }
    switch (method) {
      case "apps.connections.open":
        return this.openConnection();
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

  private openConnection(): Answer {
    const ticket = randomUUID();
    this.tickets.add(ticket);
    const { port } = this.server.address() as AddressInfo;
    return ok({ url: `ws://127.0.0.1:${port}/link/?ticket=${ticket}&app_id=${this.options.appId}` });
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
