// A local stand-in for Meta's WhatsApp Cloud API, both ways.
//
// Graph API: `POST /<version>/<phone-number-id>/messages`, checked the way Meta checks it — the
// version in the path, `Authorization: Bearer <access token>` (missing: code 2500, wrong: 401 with
// code 190), the phone number id (another: code 100, subcode 33), a JSON body with
// `messaging_product: "whatsapp"`, a text body of at most 4,096 characters (longer: 400 with code
// 131009), a `context.message_id` that names a message this person sent, a read mark for a
// message that exists. Failures and rate limits (HTTP 429, code 130429, 131056) on demand.
//
// Media: `GET /<version>/<media-id>` (bearer token) answers `{url, mime_type, sha256, file_size,
// id}` for media a person sent; that URL serves the bytes, only with the bearer token (401
// otherwise), as Meta's lookaside host does.
//
// Webhooks: builds the bodies Meta POSTs (messages from a person, statuses of the messages this
// fake sent) and delivers them signed with the app secret, as Meta does.
import { createHash, createHmac, randomBytes, randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { fixtureJson } from "../platforms/support/fixtures.js";

export interface FakeWhatsAppOptions {
  accessToken: string;
  appSecret: string;
  phoneNumberId: string;
  displayPhoneNumber?: string;
  businessAccountId?: string;
  apiVersion?: string;
}

export interface FakeWhatsAppCall {
  path: string;
  authorization: string | null;
  body: Record<string, unknown> | null;
  /** "send" for a message, "read" for a read mark, "invalid" for anything else. */
  kind: "send" | "read" | "invalid";
  status: number;
  /** Graph's error code, when the call failed. */
  errorCode: number | null;
}

export interface FakeWhatsAppSent {
  wamid: string;
  to: string;
  body: string;
  /** The wamid quoted by `context.message_id`, or null. */
  contextId: string | null;
}

export interface FakeGraphFailure {
  status: number;
  code: number;
  message: string;
  details?: string;
  retryAfterSeconds?: number;
  /** Let this many calls succeed before the failure starts (e.g. the second part of a split reply). */
  afterCalls?: number;
}

/** One message a person sends to the business number. */
export interface FakeInboundMessage {
  wamid: string;
  from: string;
  /** The message object as it appears in `value.messages[]`. */
  message: Record<string, unknown>;
}

/** Media a person sent, as the Graph API serves it. */
export interface FakeMedia {
  id: string;
  data: Buffer;
  mimeType: string;
}

/** One request to the media download URL. */
export interface FakeMediaDownload {
  id: string;
  authorization: string | null;
  status: number;
}

type Answer = { status: number; body: Record<string, unknown>; headers?: Record<string, string> };

const MAX_TEXT = 4096;

export class FakeWhatsApp {
  readonly calls: FakeWhatsAppCall[] = [];
  readonly sent: FakeWhatsAppSent[] = [];
  /** Wamids marked read, in order. */
  readonly readMarks: string[] = [];
  /** Messages people sent (wamid -> sender): what a reply may quote and a read mark may name. */
  private readonly inbound = new Map<string, string>();
  readonly media = new Map<string, FakeMedia>();
  readonly mediaDownloads: FakeMediaDownload[] = [];
  private readonly failures: Array<FakeGraphFailure & { count: number; kind: FakeWhatsAppCall["kind"] }> = [];
  private readonly options: Required<FakeWhatsAppOptions>;

  private constructor(
    private readonly server: Server,
    options: FakeWhatsAppOptions,
  ) {
    this.options = { displayPhoneNumber: "15550783881", businessAccountId: "102290129340398", apiVersion: "v21.0", ...options };
  }

  static async start(options: FakeWhatsAppOptions): Promise<FakeWhatsApp> {
    let fake: FakeWhatsApp | null = null;
    const server = createServer((req, res) => void fake?.handle(req, res));
    fake = new FakeWhatsApp(server, options);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    return fake;
  }

  /** WHATSAPP_API_URL for the gateway: the Graph base with its version. */
  get url(): string {
    const { port } = this.server.address() as AddressInfo;
    return `http://127.0.0.1:${port}/${this.options.apiVersion}`;
  }

  /** The next `count` Graph calls of this kind (default: sends, not read marks) fail this way. */
  failNext(count: number, failure: FakeGraphFailure, kind: FakeWhatsAppCall["kind"] = "send"): void {
    this.failures.push({ ...failure, count, kind });
  }

  /** HTTP 429 with Retry-After, as a throttling proxy or Graph's edge answers. */
  rateLimitNext(count: number, retryAfterSeconds: number): void {
    this.failNext(count, { status: 429, code: 130429, message: "(#130429) Rate limit hit", details: "Cloud API message throughput has been reached.", retryAfterSeconds });
  }

  /** Graph's throughput error: HTTP 400, code 130429, no Retry-After. */
  throughputLimitNext(count: number): void {
    this.failNext(count, { status: 400, code: 130429, message: "(#130429) Rate limit hit", details: "Cloud API message throughput has been reached." });
  }

  sentTo(to: string): FakeWhatsAppSent[] {
    return this.sent.filter((m) => m.to === to);
  }

  callsOf(kind: FakeWhatsAppCall["kind"]): FakeWhatsAppCall[] {
    return this.calls.filter((c) => c.kind === kind);
  }

  // ---- the webhook side ----

  /** A text message from `from` (a fresh sender unless given). */
  textMessage(text: string, from = freshWaId()): FakeInboundMessage {
    const wamid = freshWamid();
    return this.remember({
      wamid,
      from,
      message: { from, id: wamid, timestamp: String(Math.floor(Date.now() / 1000)), type: "text", text: { body: text } },
    });
  }

  /** A fixture message (image, audio, reaction...) with a fresh wamid, from `from`. */
  fixtureMessage(fixture: string, from = freshWaId(), overrides: Record<string, unknown> = {}): FakeInboundMessage {
    const wamid = freshWamid();
    const message = { ...fixtureJson<Record<string, unknown>>("whatsapp", fixture), from, id: wamid, timestamp: String(Math.floor(Date.now() / 1000)), ...overrides };
    return this.remember({ wamid, from, message });
  }

  /** Media a person uploaded: the Graph API knows its id from now on. */
  addMedia(data: Buffer, mimeType: string, id = freshMediaId()): FakeMedia {
    const media = { id, data, mimeType };
    this.media.set(id, media);
    return media;
  }

  /** An image message with a caption whose bytes the Graph API serves (a JPEG unless given). */
  imageMessage(caption: string, data: Buffer, mimeType = "image/jpeg", from = freshWaId()): FakeInboundMessage {
    const media = this.addMedia(data, mimeType);
    const image = { caption, mime_type: mimeType, sha256: createHash("sha256").update(data).digest("base64"), id: media.id };
    return this.fixtureMessage("image_message.json", from, { image });
  }

  /** The body Meta POSTs for these messages (one change; Meta batches several the same way). */
  messagesWebhook(messages: FakeInboundMessage[], options: { phoneNumberId?: string } = {}): string {
    const body = fixtureJson<WebhookBody>("whatsapp", "text_message.json");
    const value = body.entry[0].changes[0].value;
    value.metadata = { display_phone_number: this.options.displayPhoneNumber, phone_number_id: options.phoneNumberId ?? this.options.phoneNumberId };
    const senders = [...new Set(messages.map((m) => m.from))];
    value.contacts = senders.map((wa_id, i) => ({ profile: { name: `Person ${i + 1}` }, wa_id }));
    value.messages = messages.map((m) => m.message);
    body.entry[0].id = this.options.businessAccountId;
    return JSON.stringify(body);
  }

  /** The body Meta POSTs when messages this fake sent change status. */
  statusWebhook(updates: Array<{ wamid: string; status: "sent" | "delivered" | "read" | "failed"; timestamp?: number; errors?: unknown[] }>): string {
    const body = fixtureJson<WebhookBody>("whatsapp", "statuses.json");
    const value = body.entry[0].changes[0].value;
    const [template] = value.statuses as Array<Record<string, unknown>>;
    value.metadata = { display_phone_number: this.options.displayPhoneNumber, phone_number_id: this.options.phoneNumberId };
    value.statuses = updates.map((u) => {
      const sent = this.sent.find((m) => m.wamid === u.wamid);
      return {
        ...template,
        id: u.wamid,
        status: u.status,
        timestamp: String(u.timestamp ?? Math.floor(Date.now() / 1000)),
        recipient_id: sent?.to ?? "0",
        ...(u.errors ? { errors: u.errors } : {}),
      };
    });
    body.entry[0].id = this.options.businessAccountId;
    return JSON.stringify(body);
  }

  /** `X-Hub-Signature-256` for a body, with the app secret (or another). */
  sign(body: string | Buffer, secret = this.options.appSecret): string {
    return `sha256=${createHmac("sha256", secret).update(body).digest("hex")}`;
  }

  /** POSTs a webhook body to the gateway, signed as Meta signs it (headers may be overridden or removed with null). */
  async deliver(gatewayUrl: string, body: string, headers: Record<string, string | null> = {}): Promise<Response> {
    const all: Record<string, string | null> = {
      "content-type": "application/json",
      "user-agent": "facebookexternalua",
      "x-hub-signature-256": this.sign(body),
      ...headers,
    };
    return fetch(`${gatewayUrl}/whatsapp/webhook`, {
      method: "POST",
      headers: Object.fromEntries(Object.entries(all).filter((entry): entry is [string, string] => entry[1] !== null)),
      body,
      signal: AbortSignal.timeout(5_000),
    });
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private remember(message: FakeInboundMessage): FakeInboundMessage {
    this.inbound.set(message.wamid, message.from);
    return message;
  }

  // ---- the Graph side ----

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const raw = await readBody(req);
    const path = new URL(req.url ?? "/", "http://localhost").pathname;
    const authorization = req.headers.authorization ?? null;
    if (path.startsWith("/media-download/")) return this.download(path.slice("/media-download/".length), authorization, res);
    let body: Record<string, unknown> | null = null;
    try {
      const parsed: unknown = raw === "" ? null : JSON.parse(raw);
      if (parsed && typeof parsed === "object" && !Array.isArray(parsed)) body = parsed as Record<string, unknown>;
    } catch {
      body = null;
    }
    const kind: FakeWhatsAppCall["kind"] = body?.status === "read" ? "read" : body?.type !== undefined ? "send" : "invalid";
    const answer = this.answer(req.method ?? "GET", path, authorization, body, kind);
    this.calls.push({ path, authorization, body, kind, status: answer.status, errorCode: answer.status >= 400 ? Number((answer.body.error as { code?: number }).code) : null });
    res.writeHead(answer.status, { "content-type": "application/json; charset=UTF-8", ...answer.headers });
    res.end(JSON.stringify(answer.body));
  }

  private answer(method: string, path: string, authorization: string | null, body: Record<string, unknown> | null, kind: FakeWhatsAppCall["kind"]): Answer {
    const [, version, objectId, edge, ...rest] = path.split("/");
    if (version !== this.options.apiVersion || rest.length > 0) {
      return graphFail(400, 2500, `Unknown path components: ${path}`);
    }
    if (!authorization) return graphFail(400, 2500, "An active access token must be used to query information about the current user.");
    if (authorization !== `Bearer ${this.options.accessToken}`) return graphFail(401, 190, "Invalid OAuth access token - Cannot parse access token");
    if (method === "GET" && edge === undefined && objectId) return this.mediaInfo(objectId);
    if (method !== "POST" || edge !== "messages" || objectId !== this.options.phoneNumberId) {
      return graphFail(400, 100, `Unsupported ${method.toLowerCase()} request. Object with ID '${objectId}' does not exist, cannot be loaded due to missing permissions, or does not support this operation.`, undefined, 33);
    }
    const failure = this.failures.find((f) => f.kind === kind);
    if (failure && (failure.afterCalls ?? 0) > 0) failure.afterCalls = (failure.afterCalls ?? 0) - 1;
    else if (failure) {
      if (--failure.count <= 0) this.failures.splice(this.failures.indexOf(failure), 1);
      const headers = failure.retryAfterSeconds !== undefined ? { "retry-after": String(failure.retryAfterSeconds) } : undefined;
      return { ...graphFail(failure.status, failure.code, failure.message, failure.details), headers };
    }
    if (!body) return graphFail(400, 100, "(#100) Invalid parameter", "The request body must be a JSON object.");
    if (body.messaging_product !== "whatsapp") return graphFail(400, 100, "(#100) The parameter messaging_product is required.");
    return body.status === "read" ? this.markRead(body) : this.send(body);
  }

  private mediaInfo(id: string): Answer {
    const media = this.media.get(decodeURIComponent(id));
    if (!media) {
      return graphFail(400, 100, `Unsupported get request. Object with ID '${id}' does not exist, cannot be loaded due to missing permissions, or does not support this operation.`, undefined, 33);
    }
    const { port } = this.server.address() as AddressInfo;
    return {
      status: 200,
      body: {
        messaging_product: "whatsapp",
        url: `http://127.0.0.1:${port}/media-download/${encodeURIComponent(media.id)}?ext=1&hash=${randomBytes(6).toString("hex")}`,
        mime_type: media.mimeType,
        sha256: createHash("sha256").update(media.data).digest("hex"),
        file_size: media.data.byteLength,
        id: media.id,
      },
    };
  }

  /** The lookaside URL: the bytes with the bearer token, 401 without it (as Meta answers). */
  private download(id: string, authorization: string | null, res: ServerResponse): void {
    const media = this.media.get(decodeURIComponent(id));
    const status = authorization !== `Bearer ${this.options.accessToken}` ? 401 : media ? 200 : 404;
    this.mediaDownloads.push({ id: decodeURIComponent(id), authorization, status });
    if (status !== 200 || !media) {
      res.writeHead(status, { "content-type": "text/plain" });
      res.end(status === 401 ? "Unauthorized" : "Not Found");
      return;
    }
    res.writeHead(200, { "content-type": media.mimeType, "content-length": String(media.data.byteLength) });
    res.end(media.data);
  }

  private markRead(body: Record<string, unknown>): Answer {
    const id = body.message_id;
    if (typeof id !== "string" || !this.inbound.has(id)) return graphFail(400, 100, "(#100) Invalid parameter", "Invalid message_id");
    this.readMarks.push(id);
    return { status: 200, body: { success: true } };
  }

  private send(body: Record<string, unknown>): Answer {
    if (body.type !== "text") return graphFail(400, 100, "(#100) Invalid parameter", "Only text messages are expected from this gateway.");
    const to = body.to;
    if (typeof to !== "string" || !/^\d{6,20}$/.test(to)) return graphFail(400, 100, "(#100) Invalid parameter", "Param to must be a WhatsApp id or phone number.");
    const text = body.text as { body?: unknown } | undefined;
    if (typeof text?.body !== "string" || text.body === "") return graphFail(400, 100, "(#100) The parameter text['body'] is required.");
    if ([...text.body].length > MAX_TEXT) {
      return graphFail(400, 131009, "(#131009) Parameter value is not valid", `Param text['body'] must be at most ${MAX_TEXT} characters long.`);
    }
    let contextId: string | null = null;
    if (body.context !== undefined) {
      const id = (body.context as { message_id?: unknown } | null)?.message_id;
      if (typeof id !== "string" || this.inbound.get(id) !== to) {
        return graphFail(400, 131009, "(#131009) Parameter value is not valid", "context.message_id must be a message of this conversation.");
      }
      contextId = id;
    }
    const wamid = freshWamid();
    this.sent.push({ wamid, to, body: text.body, contextId });
    return { status: 200, body: { messaging_product: "whatsapp", contacts: [{ input: to, wa_id: to }], messages: [{ id: wamid }] } };
  }
}

interface WebhookBody {
  object: string;
  entry: Array<{ id: string; changes: Array<{ field: string; value: Record<string, unknown> }> }>;
}

function graphFail(status: number, code: number, message: string, details?: string, subcode?: number): Answer {
  return {
    status,
    body: {
      error: {
        message,
        type: subcode === 33 ? "GraphMethodException" : "OAuthException",
        code,
        ...(subcode !== undefined ? { error_subcode: subcode } : {}),
        ...(details ? { error_data: { messaging_product: "whatsapp", details } } : {}),
        fbtrace_id: randomUUID().replace(/-/g, "").slice(0, 22),
      },
    },
  };
}

/** A wamid the way Meta writes them: `wamid.` and base64. */
function freshWamid(): string {
  return `wamid.${randomBytes(30).toString("base64")}`;
}

let mediaIds = 0;

/** A media id as Meta writes them: a long number. */
function freshMediaId(): string {
  mediaIds += 1;
  return `17${String(process.pid % 100_000).padStart(5, "0")}${String(mediaIds).padStart(8, "0")}`;
}

let senders = 0;

/** A WhatsApp id (a phone number without '+') no other test of this process uses. */
export function freshWaId(): string {
  senders += 1;
  return `1555${String(process.pid % 10_000).padStart(4, "0")}${String(senders).padStart(4, "0")}`;
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}
