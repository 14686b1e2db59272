// A local stand-in for the Telegram Bot API that checks requests the way Telegram does: the
// token in the path (`/bot<token>/<method>`, 401 Unauthorized otherwise), method names, JSON or
// form bodies, `{ok:false, error_code, description}` answers, the 4,096-character limit,
// reply_parameters and message_thread_id against the chats it knows, editMessageText's "message
// is not modified", getUpdates' offset semantics (an offset confirms every update below it; a
// negative one keeps only the last ones), allowed_updates, the 409 while a webhook is set or
// when a second getUpdates arrives while one waits, and 429 with `parameters.retry_after` on
// demand.
//
// It also plays the people: chats, forum topics and user messages become Update objects a test
// pushes to getUpdates or delivers to a webhook the way Telegram would (with the secret token
// given to setWebhook).
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export interface FakeTelegramOptions {
  token: string;
  username?: string;
}

export interface FakeTelegramCall {
  method: string;
  params: Record<string, unknown>;
  status: number;
  description: string | null;
  at: number;
}

export interface FakeUser {
  id: number;
  is_bot: boolean;
  first_name: string;
  username?: string;
}

export interface FakeChat {
  id: number;
  type: "private" | "group" | "supergroup";
  title?: string;
  username?: string;
  is_forum?: boolean;
}

/** A message as the fake keeps it: the people's and the bot's. */
export interface FakeMessage {
  chatId: number;
  messageId: number;
  from: FakeUser;
  text: string;
  threadId: number | null;
  /** The message this one replies to (by reply_parameters). */
  replyTo: number | null;
  entities: Entity[];
  /** Texts the message had before each edit, oldest first. */
  history: string[];
  date: number;
}

interface Entity {
  type: string;
  offset: number;
  length: number;
}

export type FakeUpdate = { update_id: number } & Record<string, unknown>;

export interface UserMessageOptions {
  from?: FakeUser;
  /** A forum topic (its message_thread_id). */
  topic?: number;
  /** Reply to this message of the chat. */
  replyTo?: number;
  /** Send the text as the caption of a photo or a document. */
  media?: "photo" | "document";
  /**
   * The bytes getFile and the file route serve for the photo's largest size or the document
   * (default: a JPEG photo of the declared size, a small PDF document); `mimeType` and `name` are
   * the document's.
   */
  file?: { data: Buffer; mimeType?: string; name?: string };
}

/** A file the fake serves: getFile gives its path, `/file/bot<token>/<path>` its bytes. */
export interface FakeFile {
  fileId: string;
  path: string;
  data: Buffer;
}

/** One request to the file route: the file path asked for, and whether the token was right. */
export interface FakeFileDownload {
  path: string;
  tokenOk: boolean;
  status: number;
}

export interface WebhookDelivery {
  updateId: number;
  status: number;
  body: string;
}

interface Waiter {
  res: ServerResponse;
  offset: number | undefined;
  limit: number;
  timer: NodeJS.Timeout;
}

interface Parked {
  res: ServerResponse;
  params: Record<string, unknown>;
}

type Answer = { status: number; body: Record<string, unknown> };

const CHAT_ACTIONS = new Set(["typing", "upload_photo", "record_video", "upload_video", "record_voice", "upload_voice", "upload_document", "choose_sticker", "find_location", "record_video_note", "upload_video_note"]);
const UPDATE_TYPES = new Set(["message", "edited_message", "channel_post", "edited_channel_post", "callback_query", "inline_query", "my_chat_member", "chat_member", "message_reaction"]);
/** Telegram's default when allowed_updates was never given: everything but these. */
const NOT_BY_DEFAULT = new Set(["chat_member", "message_reaction"]);
export const MAX_TEXT = 4096;
export const NOT_MODIFIED =
  "Bad Request: message is not modified: specified new message content and reply markup are exactly the same as a specified content and reply markup of the message";

export const DEFAULT_USER: FakeUser = { id: 5_550_001, is_bot: false, first_name: "Ada", username: "ada_l" };

export class FakeTelegram {
  readonly calls: FakeTelegramCall[] = [];
  readonly messages = new Map<string, FakeMessage>();
  readonly chats = new Map<number, FakeChat & { topics: Set<number>; nextMessageId: number }>();
  readonly bot: FakeUser;
  /** Updates waiting to be confirmed, in order. */
  private queue: FakeUpdate[] = [];
  private nextUpdateId = 700_000_000 + Math.floor(Math.random() * 1_000_000);
  private nextChatId = 1;
  private allowedUpdates: Set<string> | null = null;
  private rateLimits: Array<{ count: number; retryAfter: number; methods: Set<string> | null }> = [];
  private readonly waiters = new Set<Waiter>();
  private held = false;
  private readonly parked: Parked[] = [];
  /** getUpdates requests open right now (waiting or parked). */
  private readonly openPolls = new Set<ServerResponse>();
  /** A getUpdates arrived while another was still open. */
  overlaps = 0;
  /** Requests answered 409 "terminated by other getUpdates request". */
  conflicts = 0;
  /** How many times getUpdates handed out each update. */
  readonly handedOut = new Map<number, number>();
  /** The highest offset a getUpdates confirmed. */
  confirmedBelow = 0;
  webhook: { url: string; secretToken: string | null; allowedUpdates: string[] | null } | null = null;
  commands: Array<{ command: string; description: string }> = [];
  readonly webhookDeliveries: WebhookDelivery[] = [];
  /** Files by file_id, as getFile knows them. */
  readonly files = new Map<string, FakeFile>();
  readonly fileDownloads: FakeFileDownload[] = [];

  private constructor(
    private readonly server: Server,
    readonly token: string,
    username: string,
  ) {
    this.bot = { id: Number(token.split(":")[0]), is_bot: true, first_name: "Switchboard", username };
  }

  static async start(options: FakeTelegramOptions): Promise<FakeTelegram> {
    let fake: FakeTelegram | null = null;
    const server = createServer((req, res) => void fake?.handle(req, res));
    fake = new FakeTelegram(server, options.token, options.username ?? "switchboard_test_bot");
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    return fake;
  }

  /** The API root (TELEGRAM_API_URL). */
  get url(): string {
    const { port } = this.server.address() as AddressInfo;
    return `http://127.0.0.1:${port}`;
  }

  callsTo(method: string): FakeTelegramCall[] {
    return this.calls.filter((c) => c.method === method);
  }

  /** The bot's messages in a chat (and topic), oldest first. */
  botMessagesIn(chatId: number, topic: number | null = null): FakeMessage[] {
    return [...this.messages.values()].filter((m) => m.chatId === chatId && m.from.id === this.bot.id && (topic === null || m.threadId === topic));
  }

  message(chatId: number, messageId: number): FakeMessage | undefined {
    return this.messages.get(`${chatId}:${messageId}`);
  }

  // ---- the people ----------------------------------------------------------------------------

  privateChat(user: FakeUser = { ...DEFAULT_USER, id: DEFAULT_USER.id + this.nextChatId++ }): { chat: FakeChat; user: FakeUser } {
    const chat: FakeChat = { id: user.id, type: "private", username: user.username };
    this.chats.set(chat.id, { ...chat, topics: new Set(), nextMessageId: 1 });
    return { chat, user };
  }

  group(title: string, options: { forum?: boolean } = {}): FakeChat {
    const chat: FakeChat = { id: -1_001_000_000_000 - this.nextChatId++, type: "supergroup", title, ...(options.forum ? { is_forum: true } : {}) };
    this.chats.set(chat.id, { ...chat, topics: new Set(), nextMessageId: 1 });
    return chat;
  }

  /** Opens a forum topic; returns its message_thread_id (the id of its creation message). */
  topic(chat: FakeChat, name: string, from: FakeUser = DEFAULT_USER): number {
    const known = this.knownChat(chat.id);
    const messageId = known.nextMessageId++;
    known.topics.add(messageId);
    this.store({ chatId: chat.id, messageId, from, text: "", threadId: messageId, replyTo: null, entities: [], history: [], date: now() });
    void name;
    return messageId;
  }

  /** A person's message, as the `message` update Telegram sends (mentions and commands get entities). */
  userMessage(chat: FakeChat, text: string, options: UserMessageOptions = {}): FakeUpdate {
    const from = options.from ?? (chat.type === "private" ? { ...DEFAULT_USER, id: chat.id, username: chat.username } : DEFAULT_USER);
    const known = this.knownChat(chat.id);
    const messageId = known.nextMessageId++;
    const entities = entitiesOf(text);
    const stored: FakeMessage = {
      chatId: chat.id,
      messageId,
      from,
      text,
      threadId: options.topic ?? null,
      replyTo: options.replyTo ?? null,
      entities,
      history: [],
      date: now(),
    };
    this.store(stored);
    const message: Record<string, unknown> = { message_id: messageId, from, chat: this.chatObject(chat.id), date: stored.date };
    if (options.topic !== undefined) {
      message.message_thread_id = options.topic;
      message.is_topic_message = true;
    }
    const repliedTo = options.replyTo ?? options.topic;
    if (repliedTo !== undefined) {
      const original = this.message(chat.id, repliedTo);
      if (original) message.reply_to_message = this.wire(original);
    }
    if (options.media === "photo") {
      const large = this.addFile(`AgACAgIAAxkBAAI${chat.id}x${messageId}large`, `photos/file_${messageId}.jpg`, options.file?.data ?? fakeJpeg(98_115));
      message.photo = [
        { file_id: `AgACAgIAAxkBAAI${chat.id}x${messageId}small`, file_unique_id: `AQAD${messageId}s`, width: 90, height: 67, file_size: 1204 },
        { file_id: large.fileId, file_unique_id: `AQAD${messageId}l`, width: 1280, height: 960, file_size: large.data.byteLength },
      ];
    } else if (options.media === "document") {
      const name = options.file?.name ?? "report.pdf";
      const doc = this.addFile(`BQACAgIAAxkBAAI${chat.id}x${messageId}doc`, `documents/file_${messageId}_${name}`, options.file?.data ?? Buffer.from("%PDF-1.7 fake report"));
      message.document = { file_id: doc.fileId, file_unique_id: `AgAD${messageId}d`, file_name: name, mime_type: options.file?.mimeType ?? "application/pdf", file_size: doc.data.byteLength };
    }
    if (options.media) {
      message.caption = text;
      if (entities.length) message.caption_entities = entities;
    } else {
      message.text = text;
      if (entities.length) message.entities = entities;
    }
    return { update_id: this.nextUpdateId++, message };
  }

  /** Makes a file known to getFile and served by the file route. */
  addFile(fileId: string, path: string, data: Buffer): FakeFile {
    const file = { fileId, path, data };
    this.files.set(fileId, file);
    return file;
  }

  /** The `edited_message` update of a person's message, with new text. */
  editedMessage(original: FakeUpdate, text: string): FakeUpdate {
    const message: Record<string, unknown> = { ...(original.message as Record<string, unknown>), text, edit_date: now() };
    const stored = this.message((message.chat as FakeChat).id, message.message_id as number);
    if (stored) {
      stored.history.push(stored.text);
      stored.text = text;
    }
    return { update_id: this.nextUpdateId++, edited_message: message };
  }

  /** A service message: someone joined the group. */
  memberJoined(chat: FakeChat, member: FakeUser): FakeUpdate {
    const known = this.knownChat(chat.id);
    const messageId = known.nextMessageId++;
    return {
      update_id: this.nextUpdateId++,
      message: { message_id: messageId, from: member, chat: this.chatObject(chat.id), date: now(), new_chat_members: [member], new_chat_member: member, new_chat_participant: member },
    };
  }

  /** Queues updates for getUpdates (and wakes a waiting long poll once, with all of them). */
  pushUpdates(...updates: FakeUpdate[]): void {
    this.queue.push(...updates);
    this.queue.sort((a, b) => a.update_id - b.update_id);
    for (const waiter of [...this.waiters]) this.answerWaiter(waiter, false);
  }

  /** Updates not confirmed yet. */
  get pendingUpdates(): number {
    return this.queue.length;
  }

  /** POSTs an update to a webhook URL the way Telegram does, with the secret given to setWebhook. */
  async deliverWebhook(update: FakeUpdate, url: string): Promise<WebhookDelivery> {
    const headers: Record<string, string> = { "content-type": "application/json" };
    if (this.webhook?.secretToken) headers["x-telegram-bot-api-secret-token"] = this.webhook.secretToken;
    const res = await fetch(url, { method: "POST", headers, body: JSON.stringify(update), signal: AbortSignal.timeout(10_000) });
    const delivery = { updateId: update.update_id, status: res.status, body: await res.text() };
    this.webhookDeliveries.push(delivery);
    return delivery;
  }

  // ---- failure injection ---------------------------------------------------------------------

  /** The next `count` calls of these methods (default: sendMessage and editMessageText) answer 429. */
  rateLimitNext(count: number, retryAfterSeconds: number, methods: string[] | null = ["sendMessage", "editMessageText"]): void {
    this.rateLimits.push({ count, retryAfter: retryAfterSeconds, methods: methods ? new Set(methods) : null });
  }

  /** getUpdates requests from now on are held unprocessed (not confirming anything) until released. */
  holdGetUpdates(): void {
    this.held = true;
  }

  /** Long polls waiting for updates right now. */
  get waitingPolls(): number {
    return [...this.waiters].filter((w) => !w.res.destroyed && !w.res.writableEnded).length;
  }

  /** getUpdates requests held right now (still connected). */
  get heldPolls(): number {
    return this.parked.filter((p) => !p.res.destroyed && !p.res.writableEnded).length;
  }

  releaseGetUpdates(): void {
    this.held = false;
    for (const parked of this.parked.splice(0)) {
      if (parked.res.destroyed || parked.res.writableEnded) continue;
      this.getUpdates(parked.params, parked.res);
    }
  }

  async close(): Promise<void> {
    for (const waiter of this.waiters) clearTimeout(waiter.timer);
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  // ---- HTTP ----------------------------------------------------------------------------------

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const raw = await readBody(req);
    const url = new URL(req.url ?? "/", "http://localhost");
    if (url.pathname.startsWith("/file/")) return this.serveFile(url.pathname, res);
    const match = /^\/bot([^/]*)\/([A-Za-z]+)$/.exec(url.pathname);
    const method = match?.[2] ?? url.pathname;
    const params = parseParams(raw, req.headers["content-type"] ?? null, url.searchParams);
    const reply = (answer: Answer): void => {
      this.calls.push({
        method,
        params: params ?? {},
        status: answer.status,
        description: answer.body.ok === false ? String(answer.body.description) : null,
        at: Date.now(),
      });
      if (res.destroyed || res.writableEnded) return;
      res.writeHead(answer.status, { "content-type": "application/json" });
      res.end(JSON.stringify(answer.body));
    };
    if (!match) return reply(fail(404, "Not Found"));
    if (match[1] !== this.token) return reply(fail(401, "Unauthorized"));
    if (params === null) return reply(fail(400, "Bad Request: can't parse request body"));
    const limited = this.takeRateLimit(method);
    if (limited !== null) return reply({ status: 429, body: { ok: false, error_code: 429, description: `Too Many Requests: retry after ${limited}`, parameters: { retry_after: limited } } });
    if (method === "getUpdates") {
      this.calls.push({ method, params, status: 0, description: null, at: Date.now() });
      const call = this.calls[this.calls.length - 1];
      res.on("finish", () => (call.status = res.statusCode));
      if (this.openPolls.size > 0) this.overlaps += 1;
      this.openPolls.add(res);
      // Answered, or the client went away (aborted, killed): either way no longer open.
      res.on("close", () => this.openPolls.delete(res));
      if (this.held) {
        this.parked.push({ res, params });
        return;
      }
      this.getUpdates(params, res);
      return;
    }
    reply(this.answer(method, params));
  }

  private answer(method: string, params: Record<string, unknown>): Answer {
    switch (method) {
      case "getMe":
        return ok({ ...this.bot, can_join_groups: true, can_read_all_group_messages: false, supports_inline_queries: false });
      case "sendMessage":
        return this.sendMessage(params);
      case "editMessageText":
        return this.editMessageText(params);
      case "sendChatAction":
        return this.sendChatAction(params);
      case "setMyCommands":
        return this.setMyCommands(params);
      case "setWebhook":
        return this.setWebhook(params);
      case "deleteWebhook":
        this.webhook = null;
        if (params.drop_pending_updates === true) this.queue = [];
        return ok(true);
      case "getFile":
        return this.getFile(params);
      case "getWebhookInfo":
        return ok({ url: this.webhook?.url ?? "", has_custom_certificate: false, pending_update_count: this.queue.length });
      default:
        return fail(404, "Not Found");
    }
  }

  /** `GET /file/bot<token>/<file_path>`: the bytes, for the right token only (404 otherwise, as Telegram). */
  private serveFile(pathname: string, res: ServerResponse): void {
    const match = /^\/file\/bot([^/]*)\/(.+)$/.exec(pathname);
    const path = match ? decodeURIComponent(match[2]) : pathname;
    const tokenOk = match?.[1] === this.token;
    const file = tokenOk ? [...this.files.values()].find((f) => f.path === path) : undefined;
    this.fileDownloads.push({ path, tokenOk, status: file ? 200 : 404 });
    if (!file) {
      res.writeHead(404, { "content-type": "application/json" });
      res.end(JSON.stringify({ ok: false, error_code: 404, description: "Not Found" }));
      return;
    }
    // Telegram serves files as a generic octet stream: the client must look at the bytes.
    res.writeHead(200, { "content-type": "application/octet-stream", "content-length": String(file.data.byteLength) });
    res.end(file.data);
  }

  private getFile(params: Record<string, unknown>): Answer {
    const file = typeof params.file_id === "string" ? this.files.get(params.file_id) : undefined;
    if (!file) return fail(400, "Bad Request: invalid file_id");
    // Bot API limit: bots may download files of at most 20 MB.
    if (file.data.byteLength > 20 * 1024 * 1024) return fail(400, "Bad Request: file is too big");
    return ok({ file_id: file.fileId, file_unique_id: `u${file.fileId}`, file_size: file.data.byteLength, file_path: file.path });
  }

  private takeRateLimit(method: string): number | null {
    const limit = this.rateLimits.find((l) => l.methods === null || l.methods.has(method));
    if (!limit) return null;
    if (--limit.count <= 0) this.rateLimits.splice(this.rateLimits.indexOf(limit), 1);
    return limit.retryAfter;
  }

  // ---- methods -------------------------------------------------------------------------------

  private sendMessage(params: Record<string, unknown>): Answer {
    const chat = this.chatOf(params);
    if ("error" in chat) return chat.error;
    const text = params.text;
    if (typeof text !== "string" || text.trim() === "") return fail(400, "Bad Request: message text is empty");
    if (text.length > MAX_TEXT) return fail(400, "Bad Request: message is too long");
    const thread = this.threadOf(chat.chat, params);
    if (typeof thread === "object" && thread !== null) return thread;
    const entities = this.entitiesParam(params, text);
    if (!Array.isArray(entities)) return entities;
    let replyTo: number | null = null;
    if (params.reply_parameters !== undefined) {
      const rp = params.reply_parameters as Record<string, unknown>;
      if (typeof rp !== "object" || rp === null || typeof rp.message_id !== "number") return fail(400, "Bad Request: invalid reply parameters specified");
      if (this.message(chat.chat.id, rp.message_id)) replyTo = rp.message_id;
      else if (rp.allow_sending_without_reply !== true) return fail(400, "Bad Request: message to be replied not found");
    }
    const known = this.knownChat(chat.chat.id);
    const message: FakeMessage = {
      chatId: chat.chat.id,
      messageId: known.nextMessageId++,
      from: this.bot,
      text,
      threadId: thread,
      replyTo,
      entities,
      history: [],
      date: now(),
    };
    this.store(message);
    return ok(this.wire(message));
  }

  private editMessageText(params: Record<string, unknown>): Answer {
    const chat = this.chatOf(params);
    if ("error" in chat) return chat.error;
    if (typeof params.message_id !== "number") return fail(400, "Bad Request: message identifier is not specified");
    const message = this.message(chat.chat.id, params.message_id);
    if (!message) return fail(400, "Bad Request: message to edit not found");
    if (message.from.id !== this.bot.id) return fail(400, "Bad Request: message can't be edited");
    const text = params.text;
    if (typeof text !== "string" || text.trim() === "") return fail(400, "Bad Request: message text is empty");
    if (text.length > MAX_TEXT) return fail(400, "Bad Request: MESSAGE_TOO_LONG");
    const entities = this.entitiesParam(params, text);
    if (!Array.isArray(entities)) return entities;
    if (text === message.text && JSON.stringify(entities) === JSON.stringify(message.entities)) return fail(400, NOT_MODIFIED);
    message.history.push(message.text);
    message.text = text;
    message.entities = entities;
    return ok({ ...this.wire(message), edit_date: now() });
  }

  private sendChatAction(params: Record<string, unknown>): Answer {
    const chat = this.chatOf(params);
    if ("error" in chat) return chat.error;
    if (typeof params.action !== "string" || !CHAT_ACTIONS.has(params.action)) return fail(400, "Bad Request: wrong parameter action in request");
    const thread = this.threadOf(chat.chat, params);
    if (typeof thread === "object" && thread !== null) return thread;
    return ok(true);
  }

  private setMyCommands(params: Record<string, unknown>): Answer {
    const commands = params.commands;
    if (!Array.isArray(commands)) return fail(400, "Bad Request: parameter \"commands\" is required");
    for (const c of commands as Array<Record<string, unknown>>) {
      if (typeof c.command !== "string" || !/^[a-z0-9_]{1,32}$/.test(c.command)) return fail(400, "Bad Request: BOT_COMMAND_INVALID");
      if (typeof c.description !== "string" || c.description.length < 1 || c.description.length > 256) return fail(400, "Bad Request: command description is empty");
    }
    this.commands = commands as Array<{ command: string; description: string }>;
    return ok(true);
  }

  private setWebhook(params: Record<string, unknown>): Answer {
    const url = params.url;
    if (typeof url !== "string") return fail(400, "Bad Request: parameter \"url\" is required");
    if (url === "") {
      this.webhook = null;
      return ok(true);
    }
    if (!url.startsWith("https://")) return fail(400, "Bad Request: bad webhook: An HTTPS URL must be provided for webhook");
    const secret = params.secret_token;
    if (secret !== undefined && (typeof secret !== "string" || !/^[A-Za-z0-9_-]{1,256}$/.test(secret))) {
      return fail(400, "Bad Request: secret token contains unallowed characters");
    }
    const allowed = params.allowed_updates;
    if (allowed !== undefined && (!Array.isArray(allowed) || allowed.some((t) => typeof t !== "string" || !UPDATE_TYPES.has(t)))) {
      return fail(400, "Bad Request: can't parse allowed updates");
    }
    this.webhook = { url, secretToken: (secret as string | undefined) ?? null, allowedUpdates: (allowed as string[] | undefined) ?? null };
    return ok(true);
  }

  private getUpdates(params: Record<string, unknown>, res: ServerResponse): void {
    const close = (answer: Answer): void => {
      if (res.destroyed || res.writableEnded) return;
      res.writeHead(answer.status, { "content-type": "application/json" });
      res.end(JSON.stringify(answer.body));
    };
    if (this.webhook) return close(fail(409, "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first"));
    // A second poll while one waits: Telegram ends the older one.
    for (const waiter of [...this.waiters]) {
      this.waiters.delete(waiter);
      clearTimeout(waiter.timer);
      this.conflicts += 1;
      if (!waiter.res.destroyed && !waiter.res.writableEnded) {
        waiter.res.writeHead(409, { "content-type": "application/json" });
        waiter.res.end(JSON.stringify(fail(409, "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running").body));
      }
    }
    const offset = params.offset === undefined ? undefined : Number(params.offset);
    const limit = params.limit === undefined ? 100 : Number(params.limit);
    const timeout = params.timeout === undefined ? 0 : Number(params.timeout);
    if ((offset !== undefined && !Number.isInteger(offset)) || !Number.isInteger(limit) || !Number.isFinite(timeout)) {
      return close(fail(400, "Bad Request: wrong parameter in request"));
    }
    if (params.allowed_updates !== undefined) {
      const allowed = params.allowed_updates;
      if (!Array.isArray(allowed) || allowed.some((t) => typeof t !== "string" || !UPDATE_TYPES.has(t))) return close(fail(400, "Bad Request: can't parse allowed updates"));
      this.allowedUpdates = allowed.length === 0 ? null : new Set(allowed as string[]);
    }
    this.confirm(offset);
    const waiter: Waiter = { res, offset, limit: Math.min(100, Math.max(1, limit)), timer: setTimeout(() => this.answerWaiter(waiter, true), Math.max(0, timeout) * 1000) };
    if (this.available(waiter).length > 0 || timeout <= 0) {
      clearTimeout(waiter.timer);
      const updates = this.handOut(waiter);
      return close(ok(updates));
    }
    this.waiters.add(waiter);
    res.on("close", () => {
      if (this.waiters.delete(waiter)) clearTimeout(waiter.timer);
    });
  }

  private answerWaiter(waiter: Waiter, timedOut: boolean): void {
    if (!this.waiters.has(waiter)) return;
    const updates = this.available(waiter);
    if (updates.length === 0 && !timedOut) return;
    this.waiters.delete(waiter);
    clearTimeout(waiter.timer);
    const answer = ok(this.handOut(waiter));
    if (!waiter.res.destroyed && !waiter.res.writableEnded) {
      waiter.res.writeHead(200, { "content-type": "application/json" });
      waiter.res.end(JSON.stringify(answer.body));
    }
  }

  /** An offset confirms every update below it; a negative one forgets all but the last -offset. */
  private confirm(offset: number | undefined): void {
    if (offset === undefined) return;
    if (offset < 0) {
      this.queue = this.queue.slice(offset);
      return;
    }
    this.queue = this.queue.filter((u) => u.update_id >= offset);
    this.confirmedBelow = Math.max(this.confirmedBelow, offset);
  }

  private available(waiter: Waiter): FakeUpdate[] {
    // Types the bot did not ask for are never sent (and so never wait).
    this.queue = this.queue.filter((u) => this.allowed(u));
    return this.queue.slice(0, waiter.limit);
  }

  private handOut(waiter: Waiter): FakeUpdate[] {
    const updates = this.available(waiter);
    for (const u of updates) this.handedOut.set(u.update_id, (this.handedOut.get(u.update_id) ?? 0) + 1);
    return updates;
  }

  private allowed(update: FakeUpdate): boolean {
    const type = Object.keys(update).find((k) => k !== "update_id") ?? "";
    return this.allowedUpdates ? this.allowedUpdates.has(type) : !NOT_BY_DEFAULT.has(type);
  }

  // ---- helpers -------------------------------------------------------------------------------

  private knownChat(id: number) {
    const chat = this.chats.get(id);
    if (!chat) throw new Error(`fake telegram: unknown chat ${id}`);
    return chat;
  }

  private chatObject(id: number): FakeChat {
    const { topics, nextMessageId, ...chat } = this.knownChat(id);
    void topics;
    void nextMessageId;
    return chat;
  }

  private chatOf(params: Record<string, unknown>): { chat: FakeChat } | { error: Answer } {
    const raw = params.chat_id;
    if (raw === undefined || raw === "") return { error: fail(400, "Bad Request: chat_id is empty") };
    const id = typeof raw === "number" ? raw : Number(raw);
    const chat = Number.isInteger(id) ? this.chats.get(id) : undefined;
    return chat ? { chat } : { error: fail(400, "Bad Request: chat not found") };
  }

  /** The topic a send goes to: null, or an error when the chat has no such topic. */
  private threadOf(chat: FakeChat, params: Record<string, unknown>): number | null | Answer {
    if (params.message_thread_id === undefined) return null;
    const thread = Number(params.message_thread_id);
    if (!chat.is_forum || !this.knownChat(chat.id).topics.has(thread)) return fail(400, "Bad Request: message thread not found");
    return thread;
  }

  private entitiesParam(params: Record<string, unknown>, text: string): Entity[] | Answer {
    if (params.entities === undefined) return [];
    const entities = params.entities;
    if (!Array.isArray(entities)) return fail(400, "Bad Request: can't parse entities JSON object");
    for (const e of entities as Entity[]) {
      if (typeof e?.type !== "string" || !Number.isInteger(e.offset) || !Number.isInteger(e.length) || e.offset < 0 || e.length < 1 || e.offset + e.length > text.length) {
        return fail(400, "Bad Request: can't parse entities: entity beyond the end of the text");
      }
    }
    return entities as Entity[];
  }

  private store(message: FakeMessage): void {
    this.messages.set(`${message.chatId}:${message.messageId}`, message);
  }

  private wire(message: FakeMessage): Record<string, unknown> {
    const wire: Record<string, unknown> = { message_id: message.messageId, from: message.from, chat: this.chatObject(message.chatId), date: message.date };
    if (message.threadId !== null) {
      wire.message_thread_id = message.threadId;
      wire.is_topic_message = true;
    }
    if (message.text === "" && message.threadId === message.messageId) wire.forum_topic_created = { name: "topic", icon_color: 7322096 };
    else wire.text = message.text;
    if (message.entities.length) wire.entities = message.entities;
    if (message.replyTo !== null) {
      const original = this.message(message.chatId, message.replyTo);
      if (original) wire.reply_to_message = { message_id: original.messageId, from: original.from, chat: this.chatObject(original.chatId), date: original.date, text: original.text };
    }
    return wire;
  }
}

/** Entities Telegram's clients attach: `@name` mentions and a leading `/command[@bot]`. */
function entitiesOf(text: string): Entity[] {
  const entities: Entity[] = [];
  const command = /^\/[A-Za-z0-9_]+(?:@[A-Za-z0-9_]+)?/.exec(text);
  if (command) entities.push({ type: "bot_command", offset: 0, length: command[0].length });
  for (const match of text.matchAll(/(^|[^A-Za-z0-9_/])(@[A-Za-z0-9_]{5,32})/g)) {
    entities.push({ type: "mention", offset: (match.index ?? 0) + match[1].length, length: match[2].length });
  }
  return entities;
}

/** A JPEG of `size` bytes: the JPEG signature, then filler. */
export function fakeJpeg(size: number): Buffer {
  const bytes = Buffer.alloc(size, 7);
  Buffer.from("ffd8ffe0", "hex").copy(bytes);
  return bytes;
}

function ok(result: unknown): Answer {
  return { status: 200, body: { ok: true, result } };
}

function fail(code: number, description: string): Answer {
  return { status: code, body: { ok: false, error_code: code, description } };
}

function now(): number {
  return Math.floor(Date.now() / 1000);
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

/** Query string plus a JSON or form body (form values holding JSON are decoded); null when unreadable. */
function parseParams(raw: string, contentType: string | null, query: URLSearchParams): Record<string, unknown> | null {
  const params: Record<string, unknown> = {};
  const fromForm = (form: URLSearchParams): void => {
    for (const [key, value] of form) {
      try {
        params[key] = /^[[{\d-]|^true$|^false$/.test(value) ? JSON.parse(value) : value;
      } catch {
        params[key] = value;
      }
    }
  };
  fromForm(query);
  if (raw === "") return params;
  if (contentType?.startsWith("application/json")) {
    try {
      const body = JSON.parse(raw) as unknown;
      if (typeof body !== "object" || body === null || Array.isArray(body)) return null;
      return { ...params, ...(body as Record<string, unknown>) };
    } catch {
      return null;
    }
  }
  if (contentType?.startsWith("application/x-www-form-urlencoded")) {
    fromForm(new URLSearchParams(raw));
    return params;
  }
  return null;
}
