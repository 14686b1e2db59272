// Who may talk to the bot on the chat platforms (YAML `access:`, ACCESS_MODE). API, WebSocket and
// webhook clients are governed by their key or route secret, not by this policy.
//   open       everyone (the default), except the deny list;
//   allowlist  only senders matching `allow` or `admins`;
//   pairing    also a stranger an operator approved: the stranger gets a one-time code (shown
//              once while it lives), which `switchboard pairing approve <code>` or
//              `POST /api/pairing/<code>` approves; the approval is in the store, so every node
//              holds it.
// A refused message is recorded as rejected with its reason, starts no turn and calls no model.
import { randomInt } from "node:crypto";
import type { SessionStore } from "../state/types.js";
import type { InboundMessage } from "./types.js";
import type { LimitReason } from "./usage-limits.js";

export const ACCESS_MODES = ["open", "allowlist", "pairing"] as const;
export type AccessMode = (typeof ACCESS_MODES)[number];

export interface AccessConfig {
  mode: AccessMode;
  /** Subjects (see subjectsOf) let in by allowlist and pairing modes. */
  allow: string[];
  /** Subjects refused in every mode. */
  deny: string[];
  /** Subjects always let in (and, later, the approvers of tool calls). */
  admins: string[];
  pairingCodeTtlSeconds: number;
  /** Other bots whose messages are answered (`slack:<bot id>`, `discord:<bot user id>`); every other bot is ignored. */
  allowBots: string[];
  /** Bot messages a conversation answers in a row (bot-loops.ts). */
  maxBotExchanges: number;
}

export const DEFAULT_ACCESS: AccessConfig = { mode: "open", allow: [], deny: [], admins: [], pairingCodeTtlSeconds: 3_600, allowBots: [], maxBotExchanges: 10 };

/** The shape of a subject: `<platform>:<user id>` or `<platform>:<channel|chat|team|guild>:<id>`. */
export const SUBJECT_PATTERN = /^[a-z][a-z0-9_-]*:((channel|chat|team|guild):)?\S+$/;

/** Senders the policy and the usage limits do not govern: their key or route secret does. */
const KEY_GOVERNED = new Set(["api", "websocket", "webhook"]);

export function governedByKey(platform: string): boolean {
  return KEY_GOVERNED.has(platform);
}

/** Platforms anyone can message without an invitation, warned about when they run open. */
export const OPEN_TO_ANYONE = ["telegram", "whatsapp", "discord"];

/** How long an approval is believed without asking the store again (a revocation takes this long on other nodes). */
const PAIRED_CACHE_MS = 30_000;

/** Users each of the policy's memories holds at most (strangers can be many); the oldest go first. */
const REMEMBERED_USERS = 10_000;

/** Unambiguous letters and digits for pairing codes (no 0/O, 1/I/L). */
const CODE_ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789";

export type AccessReason = "access_denied" | "not_allowed" | "pairing_required" | "bot_loop_limit";

/** Why a message was refused before any turn (the access policy's or the usage limits' reason), and what to tell its sender. */
export interface Refusal {
  reason: AccessReason | LimitReason;
  /** Text to send the sender (a new pairing code), or null: say nothing. */
  notice: string | null;
}

/** The subjects a message's sender matches: its user, its channel or chat, its team or guild. */
export function subjectsOf(message: InboundMessage): string[] {
  const { platform, userId, chatId, workspaceId } = message;
  const subjects: string[] = [];
  if (userId) subjects.push(`${platform}:${userId}`);
  if (chatId) subjects.push(`${platform}:channel:${chatId}`, `${platform}:chat:${chatId}`);
  if (workspaceId) subjects.push(`${platform}:team:${workspaceId}`, `${platform}:guild:${workspaceId}`);
  return subjects;
}

export function newPairingCode(): string {
  const pick = (): string => Array.from({ length: 4 }, () => CODE_ALPHABET[randomInt(CODE_ALPHABET.length)]).join("");
  return `${pick()}-${pick()}`;
}

export function pairingNotice(code: string): string {
  return `This bot answers approved users only. To be approved, give the operator this code: ${code}`;
}

export class AccessPolicy {
  private readonly allow: Set<string>;
  private readonly deny: Set<string>;
  /** Approved users by `<platform>:<user id>`, with when to ask the store again. */
  private readonly paired = new Map<string, number>();
  /** Live codes this process knows were already issued, by user, with their expiry (ms). */
  private readonly issued = new Map<string, number>();

  constructor(
    private readonly config: AccessConfig,
    private readonly store: SessionStore,
  ) {
    this.allow = new Set([...config.allow, ...config.admins]);
    this.deny = new Set(config.deny);
  }

  /** Null when the message may go on; else why not, and what to tell the sender. */
  async refusal(message: InboundMessage): Promise<Refusal | null> {
    if (governedByKey(message.platform)) return null;
    const subjects = subjectsOf(message);
    if (subjects.some((subject) => this.deny.has(subject))) return { reason: "access_denied", notice: null };
    // A bot reaches here only when allow_bots names it (the adapters ignore every other bot).
    if (message.fromBot) return null;
    if (this.config.mode === "open" || subjects.some((subject) => this.allow.has(subject))) return null;
    if (this.config.mode === "allowlist" || !message.userId) return { reason: "not_allowed", notice: null };
    return this.pairingRefusal(message.platform, message.userId);
  }

  private remember(memory: Map<string, number>, user: string, until: number): void {
    memory.delete(user);
    memory.set(user, until);
    if (memory.size > REMEMBERED_USERS) memory.delete(memory.keys().next().value as string);
  }

  private async pairingRefusal(platform: string, userId: string): Promise<Refusal | null> {
    const user = `${platform}:${userId}`;
    const now = Date.now();
    if ((this.paired.get(user) ?? 0) > now) return null;
    if (await this.store.isPaired(platform, userId)) {
      this.remember(this.paired, user, now + PAIRED_CACHE_MS);
      this.issued.delete(user);
      return null;
    }
    // A stranger who was shown a live code is not shown another, and costs no write.
    if ((this.issued.get(user) ?? 0) > now) return { reason: "pairing_required", notice: null };
    const ttlSeconds = this.config.pairingCodeTtlSeconds;
    const { code, fresh } = await this.store.pairingCodeFor(platform, userId, newPairingCode(), ttlSeconds);
    // One issued elsewhere may end sooner than a full lifetime: asked again after a minute.
    this.remember(this.issued, user, now + (fresh ? ttlSeconds * 1000 : 60_000));
    return { reason: "pairing_required", notice: fresh ? pairingNotice(code) : null };
  }
}
