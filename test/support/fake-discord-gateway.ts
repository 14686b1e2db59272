// A local stand-in for Discord's gateway (API v10, JSON encoding, no transport compression) that
// the real discord.js client logs in to. It follows Discord's protocol: HELLO on connect; IDENTIFY
// checked like Discord (token 4004, intents 4013/4014, shard 4010); READY, then the guild as
// GUILD_CREATE; HEARTBEAT answered with HEARTBEAT_ACK; RESUME replays the dispatches the client
// missed, then RESUMED. Tests push MESSAGE_CREATE events; like Discord, an event reaches the
// client only when its intents cover it, and without MESSAGE_CONTENT a guild message not
// addressed to the bot arrives with empty content.
//
// Whatever the client does that Discord would refuse (or that this fake cannot serve, such as
// compression) is closed with Discord's close code and kept in `problems` for the test to check.
import { once } from "node:events";
import type { IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { randomBytes } from "node:crypto";
import { WebSocket, WebSocketServer, type RawData } from "ws";

export const GatewayOp = {
  Dispatch: 0,
  Heartbeat: 1,
  Identify: 2,
  PresenceUpdate: 3,
  VoiceStateUpdate: 4,
  Resume: 6,
  Reconnect: 7,
  RequestGuildMembers: 8,
  InvalidSession: 9,
  Hello: 10,
  HeartbeatAck: 11,
  RequestSoundboardSounds: 31,
} as const;

export const GatewayClose = {
  UnknownError: 4000,
  UnknownOpcode: 4001,
  DecodeError: 4002,
  NotAuthenticated: 4003,
  AuthenticationFailed: 4004,
  AlreadyAuthenticated: 4005,
  InvalidSeq: 4007,
  InvalidShard: 4010,
  InvalidApiVersion: 4012,
  InvalidIntents: 4013,
  DisallowedIntents: 4014,
} as const;

export const Intent = {
  Guilds: 1 << 0,
  GuildMembers: 1 << 1,
  GuildPresences: 1 << 8,
  GuildMessages: 1 << 9,
  DirectMessages: 1 << 12,
  MessageContent: 1 << 15,
} as const;

/** Intents an app must switch on in the developer portal before asking for them. */
const PRIVILEGED_INTENTS = Intent.GuildMembers | Intent.GuildPresences | Intent.MessageContent;
/** Discord's highest intent is 1 << 25; bits above it make IDENTIFY invalid. */
const ALL_INTENTS = 2 ** 26 - 1;
/** ApplicationFlags.GatewayMessageContent / GatewayMessageContentLimited. */
const APP_FLAG_MESSAGE_CONTENT = 1 << 18;
const APP_FLAG_MESSAGE_CONTENT_LIMITED = 1 << 19;
/** Discord sends each guild once it has loaded, after READY rather than in the same write. */
const GUILD_LOAD_DELAY_MS = 20;
const CHANNEL_TYPE = { GuildText: 0, DM: 1 } as const;
const DISCORD_EPOCH = 1420070400000n;

export interface FakeDiscordUser {
  id: string;
  username: string;
  globalName?: string | null;
  bot?: boolean;
}

export interface FakeGuildChannel {
  id: string;
  name: string;
}

export interface FakeDiscordGatewayOptions {
  botToken: string;
  bot: FakeDiscordUser;
  applicationId: string;
  guild: { id: string; name: string; channels: FakeGuildChannel[] };
  /** Discord sends 41250; a test uses less so that heartbeats happen while it runs. */
  heartbeatIntervalMs?: number;
  /** Privileged intents (MESSAGE_CONTENT, ...) are switched on for the app. Default true. */
  privilegedIntentsEnabled?: boolean;
  /** Intents the client under test must ask for: missing ones are kept in `problems`. */
  requiredIntents?: number;
}

/** One WebSocket connection the client opened, as the fake saw it. */
export interface FakeGatewayConnection {
  /** "/" is the address GET /gateway/bot gives; "/resume" is READY's resume_gateway_url. */
  path: string;
  query: { v: string | null; encoding: string | null; compress: string | null };
  /** How the client authenticated on this connection, if it did. */
  auth: "identify" | "resume" | null;
  /** The intents IDENTIFY asked for. */
  intents: number | null;
  heartbeats: number;
  /** The close code, whichever side closed. */
  closeCode: number | null;
}

interface DispatchPayload {
  op: typeof GatewayOp.Dispatch;
  t: string;
  s: number;
  d: unknown;
}

interface GatewaySession {
  id: string;
  intents: number;
  seq: number;
  /** Every dispatch of the session, for replay on RESUME. */
  sent: DispatchPayload[];
  /** The connection dispatches go to; null while the client is away (they wait for RESUME). */
  socket: WebSocket | null;
}

interface LiveConnection {
  record: FakeGatewayConnection;
  socket: WebSocket;
  session: GatewaySession | null;
}

/** A user object as Discord sends it. */
interface WireUser {
  id: string;
  username: string;
  discriminator: string;
  global_name: string | null;
  avatar: string | null;
  bot?: boolean;
}

interface WireMember {
  roles: string[];
  joined_at: string;
  deaf: boolean;
  mute: boolean;
  flags: number;
  user?: WireUser;
}

/** An attachment of a message (Discord's wire shape); the fake REST API's CDN can serve its url. */
export interface WireAttachment {
  id: string;
  filename: string;
  size: number;
  url: string;
  proxy_url: string;
  content_type?: string;
}

interface WireMessage {
  id: string;
  channel_id: string;
  channel_type: number;
  guild_id?: string;
  member?: WireMember;
  author: WireUser;
  content: string;
  timestamp: string;
  edited_timestamp: null;
  tts: boolean;
  mention_everyone: boolean;
  mentions: Array<WireUser & { member?: WireMember }>;
  mention_roles: string[];
  attachments: WireAttachment[];
  embeds: never[];
  components: never[];
  pinned: boolean;
  type: number;
  flags: number;
}

export class FakeDiscordGateway {
  readonly connections: FakeGatewayConnection[] = [];
  /** What the client did that Discord would refuse, or that this fake cannot serve. */
  readonly problems: string[] = [];
  private readonly sessions = new Map<string, GatewaySession>();
  private readonly live = new Map<WebSocket, LiveConnection>();
  private current: GatewaySession | null = null;
  private readonly users = new Map<string, FakeDiscordUser>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly joinedAt = new Date().toISOString();
  private sequence = 0n;

  private constructor(
    private readonly server: WebSocketServer,
    private readonly options: FakeDiscordGatewayOptions,
  ) {
    this.users.set(options.bot.id, { ...options.bot, bot: true });
  }

  static async start(options: FakeDiscordGatewayOptions): Promise<FakeDiscordGateway> {
    const server = new WebSocketServer({ host: "127.0.0.1", port: 0 });
    await once(server, "listening");
    const fake = new FakeDiscordGateway(server, options);
    server.on("connection", (socket, request) => fake.accept(socket, request));
    return fake;
  }

  /** The gateway address, as GET /gateway/bot answers it. */
  get url(): string {
    const { port } = this.server.address() as AddressInfo;
    return `ws://127.0.0.1:${port}`;
  }

  /** A different address, as on Discord, so a test sees the client resume where READY said. */
  get resumeUrl(): string {
    return `${this.url}/resume`;
  }

  get identifies(): number {
    return this.connections.filter((c) => c.auth === "identify").length;
  }

  get resumes(): number {
    return this.connections.filter((c) => c.auth === "resume").length;
  }

  /** A session has a live, authenticated connection. */
  get connected(): boolean {
    return this.current?.socket?.readyState === WebSocket.OPEN;
  }

  /** A message in a channel of the guild; returns its id. */
  guildMessage(input: { channelId: string; author: FakeDiscordUser; content: string; attachments?: WireAttachment[] }): string {
    if (!this.options.guild.channels.some((c) => c.id === input.channelId)) {
      throw new Error(`channel ${input.channelId} is not in the fake guild`);
    }
    return this.messageCreate({ ...input, guildId: this.options.guild.id });
  }

  /** A direct message to the bot; returns its id. */
  directMessage(input: { channelId: string; author: FakeDiscordUser; content: string; attachments?: WireAttachment[] }): string {
    return this.messageCreate({ ...input, guildId: null });
  }

  /** Drops the connection from the server side; the session stays resumable. */
  disconnect(code: number = GatewayClose.UnknownError): void {
    const session = this.requireSession();
    const socket = session.socket;
    if (!socket) throw new Error("the client is not connected");
    // Dispatches from now on wait for the client's RESUME.
    session.socket = null;
    const live = this.live.get(socket);
    if (live) live.record.closeCode ??= code;
    socket.close(code, "Unknown error.");
  }

  /** Op 7: asks the client to reconnect and resume. */
  requestReconnect(): void {
    const socket = this.requireSession().socket;
    if (!socket) throw new Error("the client is not connected");
    this.send(socket, { op: GatewayOp.Reconnect, d: null, s: null, t: null });
  }

  async close(): Promise<void> {
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    for (const client of this.server.clients) client.terminate();
    await new Promise<void>((resolve, reject) => this.server.close((error) => (error ? reject(error) : resolve())));
  }

  private accept(socket: WebSocket, request: IncomingMessage): void {
    const url = new URL(request.url ?? "/", "ws://127.0.0.1");
    const record: FakeGatewayConnection = {
      path: url.pathname,
      query: { v: url.searchParams.get("v"), encoding: url.searchParams.get("encoding"), compress: url.searchParams.get("compress") },
      auth: null,
      intents: null,
      heartbeats: 0,
      closeCode: null,
    };
    this.connections.push(record);
    const live: LiveConnection = { record, socket, session: null };
    this.live.set(socket, live);
    socket.on("message", (raw, isBinary) => this.onFrame(live, raw, isBinary));
    socket.on("close", (code) => this.onClose(live, code));
    if (record.query.v !== "10") return this.refuse(live, GatewayClose.InvalidApiVersion, `API version ${record.query.v} is not 10`);
    // Discord also speaks ETF and zlib-stream; this fake sends plain JSON text frames only.
    if (record.query.encoding !== "json") return this.refuse(live, GatewayClose.DecodeError, `encoding ${record.query.encoding} is not json`);
    if (record.query.compress !== null) {
      return this.refuse(live, GatewayClose.DecodeError, `compress=${record.query.compress} is not served by this fake`);
    }
    this.send(socket, { op: GatewayOp.Hello, d: { heartbeat_interval: this.options.heartbeatIntervalMs ?? 41_250 }, s: null, t: null });
  }

  private onFrame(live: LiveConnection, raw: RawData, isBinary: boolean): void {
    if (isBinary) return this.refuse(live, GatewayClose.DecodeError, "binary frame on a JSON connection");
    const frame = parseFrame(rawText(raw));
    if (!frame) return this.refuse(live, GatewayClose.DecodeError, "a frame that is not a gateway payload");
    switch (frame.op) {
      case GatewayOp.Heartbeat:
        live.record.heartbeats += 1;
        if (frame.d !== null && typeof frame.d !== "number") this.problems.push(`HEARTBEAT with d=${JSON.stringify(frame.d)}`);
        this.send(live.socket, { op: GatewayOp.HeartbeatAck, d: null, s: null, t: null });
        return;
      case GatewayOp.Identify:
      case GatewayOp.Resume:
        if (live.session) return this.refuse(live, GatewayClose.AlreadyAuthenticated, "a second IDENTIFY or RESUME");
        return frame.op === GatewayOp.Identify ? this.identify(live, asRecord(frame.d)) : this.resume(live, asRecord(frame.d));
      case GatewayOp.PresenceUpdate:
      case GatewayOp.VoiceStateUpdate:
      case GatewayOp.RequestGuildMembers:
      case GatewayOp.RequestSoundboardSounds:
        if (!live.session) return this.refuse(live, GatewayClose.NotAuthenticated, `op ${frame.op} before IDENTIFY`);
        return;
      default:
        return this.refuse(live, GatewayClose.UnknownOpcode, `unknown op ${frame.op}`);
    }
  }

  private identify(live: LiveConnection, d: Record<string, unknown> | null): void {
    if (!d) return this.refuse(live, GatewayClose.DecodeError, "IDENTIFY without data");
    if (d.token !== this.options.botToken) return this.refuse(live, GatewayClose.AuthenticationFailed, "IDENTIFY with a wrong token");
    const properties = asRecord(d.properties);
    if (!properties || ["os", "browser", "device"].some((key) => typeof properties[key] !== "string")) {
      return this.refuse(live, GatewayClose.DecodeError, "IDENTIFY properties need os, browser and device");
    }
    const intents = d.intents;
    if (typeof intents !== "number" || !Number.isInteger(intents) || intents < 0 || intents > ALL_INTENTS) {
      return this.refuse(live, GatewayClose.InvalidIntents, `invalid intents ${String(intents)}`);
    }
    if ((intents & PRIVILEGED_INTENTS) !== 0 && !this.privilegedIntentsEnabled) {
      return this.refuse(live, GatewayClose.DisallowedIntents, "privileged intents the app has not enabled");
    }
    // GET /gateway/bot says one shard: IDENTIFY must be shard 0 of 1 (or leave shard out).
    if (d.shard !== undefined && !(Array.isArray(d.shard) && d.shard[0] === 0 && d.shard[1] === 1)) {
      return this.refuse(live, GatewayClose.InvalidShard, `shard ${JSON.stringify(d.shard)}`);
    }
    if (d.compress === true) this.problems.push("IDENTIFY asked for compressed payloads, which this fake does not send");
    const required = this.options.requiredIntents ?? 0;
    if ((intents & required) !== required) {
      this.problems.push(`IDENTIFY intents ${intents} lack required intents ${required & ~intents}`);
    }

    const session: GatewaySession = { id: randomBytes(16).toString("hex"), intents, seq: 0, sent: [], socket: live.socket };
    this.sessions.set(session.id, session);
    this.current = session;
    live.session = session;
    live.record.auth = "identify";
    live.record.intents = intents;
    this.dispatch(session, "READY", {
      v: 10,
      user: this.wireUser(this.options.bot),
      guilds: [{ id: this.options.guild.id, unavailable: true }],
      session_id: session.id,
      resume_gateway_url: this.resumeUrl,
      shard: [0, 1],
      application: { id: this.options.applicationId, flags: this.privilegedIntentsEnabled ? APP_FLAG_MESSAGE_CONTENT : APP_FLAG_MESSAGE_CONTENT_LIMITED },
      private_channels: [],
      session_type: "normal",
    });
    this.later(GUILD_LOAD_DELAY_MS, () => this.dispatch(session, "GUILD_CREATE", this.guildCreate()));
  }

  private resume(live: LiveConnection, d: Record<string, unknown> | null): void {
    if (!d || typeof d.session_id !== "string" || typeof d.seq !== "number") {
      return this.refuse(live, GatewayClose.DecodeError, "RESUME needs session_id and seq");
    }
    if (d.token !== this.options.botToken) return this.refuse(live, GatewayClose.AuthenticationFailed, "RESUME with a wrong token");
    const session = this.sessions.get(d.session_id);
    if (!session) {
      // Not the client's fault (sessions end): Discord answers "invalid session, not resumable".
      this.send(live.socket, { op: GatewayOp.InvalidSession, d: false, s: null, t: null });
      return;
    }
    if (d.seq > session.seq || d.seq < 0) return this.refuse(live, GatewayClose.InvalidSeq, `RESUME from seq ${d.seq} of ${session.seq}`);
    if (live.record.path !== new URL(this.resumeUrl).pathname) {
      this.problems.push(`RESUME on ${live.record.path}, not on READY's resume_gateway_url`);
    }
    session.socket = live.socket;
    live.session = session;
    live.record.auth = "resume";
    for (const payload of session.sent) if (payload.s > d.seq) this.send(live.socket, payload);
    this.dispatch(session, "RESUMED", {});
  }

  private onClose(live: LiveConnection, code: number): void {
    this.live.delete(live.socket);
    live.record.closeCode ??= code;
    const session = live.session;
    if (!session) return;
    if (session.socket === live.socket) session.socket = null;
    // A client that closes with 1000 or 1001 ends its session on Discord: it cannot resume.
    if (code === 1000 || code === 1001) {
      this.sessions.delete(session.id);
      if (this.current === session) this.current = null;
    }
  }

  private refuse(live: LiveConnection, code: number, problem: string): void {
    this.problems.push(`closed ${code}: ${problem}`);
    live.record.closeCode ??= code;
    live.socket.close(code, problem.slice(0, 120));
  }

  private messageCreate(input: { channelId: string; author: FakeDiscordUser; content: string; guildId: string | null; attachments?: WireAttachment[] }): string {
    const session = this.requireSession();
    this.users.set(input.author.id, input.author);
    const id = this.snowflake();
    const intent = input.guildId === null ? Intent.DirectMessages : Intent.GuildMessages;
    if ((session.intents & intent) === 0) return id;

    const mentioned = [...input.content.matchAll(/<@!?(\d+)>/g)]
      .map((match) => this.users.get(match[1]))
      .filter((user): user is FakeDiscordUser => user !== undefined);
    const botId = this.options.bot.id;
    const contentVisible =
      (session.intents & Intent.MessageContent) !== 0 ||
      input.guildId === null ||
      input.author.id === botId ||
      mentioned.some((user) => user.id === botId);
    const member = input.guildId === null ? undefined : this.wireMember();
    const message: WireMessage = {
      id,
      channel_id: input.channelId,
      channel_type: input.guildId === null ? CHANNEL_TYPE.DM : CHANNEL_TYPE.GuildText,
      ...(input.guildId === null ? {} : { guild_id: input.guildId, member }),
      author: this.wireUser(input.author),
      content: contentVisible ? input.content : "",
      timestamp: new Date().toISOString(),
      edited_timestamp: null,
      tts: false,
      mention_everyone: false,
      mentions: mentioned.map((user) => ({ ...this.wireUser(user), ...(member ? { member } : {}) })),
      mention_roles: [],
      attachments: input.attachments ?? [],
      embeds: [],
      components: [],
      pinned: false,
      type: 0,
      flags: 0,
    };
    this.dispatch(session, "MESSAGE_CREATE", message);
    return id;
  }

  private dispatch(session: GatewaySession, t: string, d: unknown): void {
    session.seq += 1;
    const payload: DispatchPayload = { op: GatewayOp.Dispatch, t, s: session.seq, d };
    session.sent.push(payload);
    if (session.socket?.readyState === WebSocket.OPEN) this.send(session.socket, payload);
  }

  private guildCreate(): Record<string, unknown> {
    const { guild, bot } = this.options;
    return {
      id: guild.id,
      name: guild.name,
      icon: null,
      splash: null,
      discovery_splash: null,
      banner: null,
      description: null,
      // Someone else owns the guild; the bot is a member.
      owner_id: "1000000000000000001",
      application_id: null,
      afk_channel_id: null,
      afk_timeout: 300,
      system_channel_id: null,
      system_channel_flags: 0,
      rules_channel_id: null,
      public_updates_channel_id: null,
      safety_alerts_channel_id: null,
      verification_level: 0,
      default_message_notifications: 0,
      explicit_content_filter: 0,
      mfa_level: 0,
      nsfw_level: 0,
      premium_tier: 0,
      premium_progress_bar_enabled: false,
      preferred_locale: "en-US",
      vanity_url_code: null,
      features: [],
      hub_type: null,
      incidents_data: null,
      roles: [
        {
          id: guild.id,
          name: "@everyone",
          color: 0,
          hoist: false,
          icon: null,
          unicode_emoji: null,
          position: 0,
          permissions: "2248473465835073",
          managed: false,
          mentionable: false,
          flags: 0,
        },
      ],
      emojis: [],
      stickers: [],
      joined_at: this.joinedAt,
      large: false,
      unavailable: false,
      member_count: 2,
      members: [{ ...this.wireMember(), user: this.wireUser(bot) }],
      channels: guild.channels.map((channel, position) => ({
        id: channel.id,
        type: CHANNEL_TYPE.GuildText,
        name: channel.name,
        position,
        parent_id: null,
        topic: null,
        nsfw: false,
        last_message_id: null,
        rate_limit_per_user: 0,
        permission_overwrites: [],
        flags: 0,
      })),
      threads: [],
      voice_states: [],
      presences: [],
      stage_instances: [],
      guild_scheduled_events: [],
      soundboard_sounds: [],
    };
  }

  private wireUser(user: FakeDiscordUser): WireUser {
    return {
      id: user.id,
      username: user.username,
      discriminator: "0",
      global_name: user.globalName ?? null,
      avatar: null,
      ...(user.bot ? { bot: true } : {}),
    };
  }

  private wireMember(): WireMember {
    return { roles: [], joined_at: this.joinedAt, deaf: false, mute: false, flags: 0 };
  }

  private get privilegedIntentsEnabled(): boolean {
    return this.options.privilegedIntentsEnabled ?? true;
  }

  private requireSession(): GatewaySession {
    if (!this.current) throw new Error("no gateway session: the client has not identified");
    return this.current;
  }

  private send(socket: WebSocket, payload: { op: number; d: unknown; s: number | null; t: string | null }): void {
    if (socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify(payload));
  }

  private later(ms: number, fn: () => void): void {
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      fn();
    }, ms);
    this.timers.add(timer);
  }

  private snowflake(): string {
    this.sequence += 1n;
    return String(((BigInt(Date.now()) - DISCORD_EPOCH) << 22n) | (this.sequence & 0xfffn));
  }
}

function rawText(raw: RawData): string {
  if (Array.isArray(raw)) return Buffer.concat(raw).toString("utf8");
  return Buffer.from(raw instanceof ArrayBuffer ? new Uint8Array(raw) : raw).toString("utf8");
}

function parseFrame(text: string): { op: number; d: unknown } | null {
  try {
    const value = asRecord(JSON.parse(text));
    return value && typeof value.op === "number" ? { op: value.op, d: value.d ?? null } : null;
  } catch {
    return null;
  }
}

function asRecord(value: unknown): Record<string, unknown> | null {
  return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
}
