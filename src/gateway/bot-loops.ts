// Bots talking to bots: another bot's messages reach the agent only when the access policy lets
// that bot in (`allow_bots`), and then a conversation answers at most `max_bot_exchanges` bot
// messages in a row. A person's message there starts the count again. Counted in Redis, so every
// node counts the same run.
import type { Redis } from "ioredis";
import type { RedisKeys } from "../bus/keys.js";
import type { Refusal } from "./access.js";
import type { InboundMessage } from "./types.js";

/** A run of bot messages is forgotten a day after its last one. */
const RUN_LIFE_MS = 86_400_000;

const COUNT = `
local n = redis.call('INCR', KEYS[1])
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return n`;

export class BotLoops {
  constructor(
    private readonly redis: Redis,
    private readonly keys: RedisKeys,
    private readonly maxExchanges: number,
  ) {}

  /** A bot's message past the run's limit is refused (no notice: its reader is a bot); a person's resets the run. */
  async refusal(message: InboundMessage): Promise<Refusal | null> {
    const key = this.keys.usageLimit("bot-run", "conversation", message.sessionKey, 0);
    if (!message.fromBot) {
      await this.redis.del(key);
      return null;
    }
    const run = Number(await this.redis.eval(COUNT, 1, key, RUN_LIFE_MS));
    return run > this.maxExchanges ? { reason: "bot_loop_limit", notice: null } : null;
  }
}
