// Usage limits (YAML `limits:`): messages a minute and model tokens a day, per chat user and per
// conversation, counted in Redis so every node and process sees the same counts. A message over a
// limit is refused (recorded as rejected, no model call); its sender is told once per window, not
// once per message. Tokens are counted after each stored turn; messages when they arrive. API,
// WebSocket and webhook clients are governed by their key, not by these limits.
import type { Redis } from "ioredis";
import type { RedisKeys } from "../bus/keys.js";
import type { UsageInsert } from "../state/types.js";
import { governedByKey, type Refusal } from "./access.js";
import type { InboundMessage } from "./types.js";

export interface LimitPair {
  /** 0: no limit. */
  messagesPerMinute: number;
  tokensPerDay: number;
}

export interface LimitsConfig {
  user: LimitPair;
  conversation: LimitPair;
}

export const NO_LIMITS: LimitsConfig = { user: { messagesPerMinute: 0, tokensPerDay: 0 }, conversation: { messagesPerMinute: 0, tokensPerDay: 0 } };

export function limitsConfigured(config: LimitsConfig): boolean {
  return [config.user, config.conversation].some((pair) => pair.messagesPerMinute > 0 || pair.tokensPerDay > 0);
}

const MINUTE_MS = 60_000;
const DAY_MS = 86_400_000;

/**
 * KEYS: messages of the user, of the conversation (this minute); tokens of the user, of the
 * conversation (today); the notice marks of the four. ARGV: the four limits (0: none), the
 * counters' and marks' lives in ms (a minute's, a day's). Counts the message, then returns the
 * first limit it is over (1-4, tokens first) and whether its notice is due (1: first this window),
 * or {0, 0}.
 */
const CHECK = `
local function count(key, limit)
  if tonumber(limit) <= 0 then return 0 end
  local n = redis.call('INCR', key)
  if n == 1 then redis.call('PEXPIRE', key, ARGV[5]) end
  return n
end
local user_messages = count(KEYS[1], ARGV[1])
local conversation_messages = count(KEYS[2], ARGV[2])
local over = 0
if tonumber(ARGV[3]) > 0 and tonumber(redis.call('GET', KEYS[3]) or '0') >= tonumber(ARGV[3]) then over = 3
elseif tonumber(ARGV[4]) > 0 and tonumber(redis.call('GET', KEYS[4]) or '0') >= tonumber(ARGV[4]) then over = 4
elseif tonumber(ARGV[1]) > 0 and user_messages > tonumber(ARGV[1]) then over = 1
elseif tonumber(ARGV[2]) > 0 and conversation_messages > tonumber(ARGV[2]) then over = 2
end
if over == 0 then return {0, 0} end
local life = (over >= 3) and ARGV[6] or ARGV[5]
local fresh = redis.call('SET', KEYS[4 + over], '1', 'NX', 'PX', life)
return {over, fresh and 1 or 0}`;

/** Adds tokens to the user's and the conversation's counts of today. KEYS: the two counters; ARGV: tokens, life in ms. */
const ADD_TOKENS = `
for _, key in ipairs(KEYS) do
  redis.call('INCRBY', key, ARGV[1])
  redis.call('PEXPIRE', key, ARGV[2])
end
return 1`;

export type LimitReason = "user_rate_limited" | "conversation_rate_limited" | "user_token_limit" | "conversation_token_limit";
const REASONS: LimitReason[] = ["user_rate_limited", "conversation_rate_limited", "user_token_limit", "conversation_token_limit"];

export function limitNotice(reason: LimitReason, config: LimitsConfig): string {
  switch (reason) {
    case "user_rate_limited":
      return `You are sending messages faster than this bot answers them (${config.user.messagesPerMinute} a minute). Please wait a minute.`;
    case "conversation_rate_limited":
      return `This conversation is getting more messages than this bot answers (${config.conversation.messagesPerMinute} a minute). Please wait a minute.`;
    case "user_token_limit":
      return "You have reached today's usage limit for this bot. It resets at midnight UTC.";
    case "conversation_token_limit":
      return "This conversation has reached today's usage limit for this bot. It resets at midnight UTC.";
  }
}

export class UsageLimits {
  constructor(
    private readonly redis: Redis,
    private readonly keys: RedisKeys,
    private readonly config: LimitsConfig,
    private readonly clock: () => number = Date.now,
  ) {}

  /** Counts the message; a refusal when it is over a limit (with the notice when it is the window's first). */
  async refusal(message: InboundMessage): Promise<Refusal | null> {
    if (governedByKey(message.platform)) return null;
    const { user, conversation } = this.config;
    const now = this.clock();
    const minute = Math.floor(now / MINUTE_MS);
    const day = Math.floor(now / DAY_MS);
    const userId = `${message.platform}:${message.userId ?? "unknown"}`;
    const conversationId = message.sessionKey;
    const k = this.keys;
    const keys = [
      k.usageLimit("msg", "user", userId, minute),
      k.usageLimit("msg", "conversation", conversationId, minute),
      k.usageLimit("tok", "user", userId, day),
      k.usageLimit("tok", "conversation", conversationId, day),
      k.usageLimit("notice-msg", "user", userId, minute),
      k.usageLimit("notice-msg", "conversation", conversationId, minute),
      k.usageLimit("notice-tok", "user", userId, day),
      k.usageLimit("notice-tok", "conversation", conversationId, day),
    ];
    const limits = [user.messagesPerMinute, conversation.messagesPerMinute, user.tokensPerDay, conversation.tokensPerDay];
    const [over, fresh] = (await this.redis.eval(CHECK, keys.length, ...keys, ...limits, 2 * MINUTE_MS, 2 * DAY_MS)) as [number, number];
    if (over === 0) return null;
    const reason = REASONS[over - 1]!;
    return { reason, notice: fresh === 1 ? limitNotice(reason, this.config) : null };
  }

  /** A stored turn's tokens, towards its user's and its conversation's daily limits. */
  async count(usage: UsageInsert, conversationKey: string): Promise<void> {
    const tokens = usage.promptTokens + usage.completionTokens;
    if (tokens <= 0 || governedByKey(usage.platform)) return;
    const day = Math.floor(this.clock() / DAY_MS);
    const keys = [this.keys.usageLimit("tok", "user", `${usage.platform}:${usage.userId ?? "unknown"}`, day), this.keys.usageLimit("tok", "conversation", conversationKey, day)];
    await this.redis.eval(ADD_TOKENS, keys.length, ...keys, tokens, 2 * DAY_MS);
  }
}
