// The short Redis Stream behind the interrupt channel. Appending a request and publishing it happen
// in one script, so the channel carries requests in log order, each with its stream id: a
// subscriber that was away reads what it missed from the log, and tells by id what it already has.
// Only recent requests are ever read, so the log is trimmed (MAXLEN ~) and expires when idle.
import { createHash } from "node:crypto";
import type { Redis } from "ioredis";
import { z } from "zod";
import type { InterruptRequest } from "./types.js";
import { comparePositions, parseStreamId, STREAM_START, type StreamPosition } from "./event-bus.js";

export interface LoggedInterrupt {
  request: InterruptRequest;
  position: StreamPosition;
  /** How old the request was when it was read back from the log (Redis clock); live ones have none. */
  ageMs?: number;
}

/** A channel message: the request, and its log position when the publisher logged it. */
export interface HeardInterrupt {
  request: InterruptRequest;
  position: StreamPosition | null;
}

/** About how many requests the log keeps (`XADD MAXLEN ~`). */
const LOG_MAX_LEN = 1000;
const READ_PAGE = 200;

const RequestFields = z.object({
  sessionId: z.string().min(1),
  text: z.string().optional(),
  hard: z.boolean().optional(),
  beforeInboxId: z.number().int().optional(),
});
// The request's own fields plus its stream id; subscribers that do not know `id` ignore it.
const ChannelMessage = RequestFields.extend({ id: z.string().optional() });

// KEYS[1] log; ARGV: max length, ttl seconds, request JSON (an object), channel.
const APPEND_AND_PUBLISH_SCRIPT = `
local id = redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[1], '*', 'request', ARGV[3])
redis.call('EXPIRE', KEYS[1], ARGV[2])
redis.call('PUBLISH', ARGV[4], '{"id":"' .. id .. '",' .. string.sub(ARGV[3], 2))
return id
`;
const APPEND_AND_PUBLISH_SHA = createHash("sha1").update(APPEND_AND_PUBLISH_SCRIPT).digest("hex");

export class InterruptLog {
  constructor(
    /** Commands connection (EVALSHA, XRANGE, TIME). */
    private readonly redis: Redis,
    readonly key: string,
    private readonly channel: string,
    private readonly ttlSeconds: number,
  ) {}

  /** Log the request and publish it on the channel; returns its stream id. */
  async append(request: InterruptRequest): Promise<string> {
    const args = [this.key, String(LOG_MAX_LEN), String(this.ttlSeconds), requestJson(request), this.channel];
    try {
      return String(await this.redis.evalsha(APPEND_AND_PUBLISH_SHA, 1, ...args));
    } catch (err) {
      if (!String((err as Error).message).includes("NOSCRIPT")) throw err;
      return String(await this.redis.eval(APPEND_AND_PUBLISH_SCRIPT, 1, ...args));
    }
  }

  /** The id of the newest logged request, or the stream start when the log is empty or gone. */
  async newestPosition(): Promise<StreamPosition> {
    const newest = await this.redis.xrevrange(this.key, "+", "-", "COUNT", 1);
    return (newest.length > 0 && parseStreamId(newest[0][0])) || STREAM_START;
  }

  /**
   * Logged requests after `after` (exclusive) that are at most `windowMs` old by the Redis clock
   * (the same clock that stamped their ids), oldest first, in pages. Unreadable entries are skipped.
   */
  async *readRecent(after: StreamPosition, windowMs: number): AsyncIterable<LoggedInterrupt[]> {
    const now = await this.redisNowMs();
    const horizon: StreamPosition = { ms: now - windowMs, seq: 0 };
    let from = comparePositions(after, horizon) > 0 ? after : horizon;
    while (true) {
      const entries = await this.redis.xrange(this.key, `(${from.ms}-${from.seq}`, "+", "COUNT", READ_PAGE);
      if (entries.length === 0) return;
      const page: LoggedInterrupt[] = [];
      for (const [id, fields] of entries) {
        const position = parseStreamId(id);
        const request = position && requestFromEntry(fields);
        if (position && request) page.push({ request, position, ageMs: Math.max(0, now - position.ms) });
      }
      yield page;
      if (entries.length < READ_PAGE) return;
      from = parseStreamId(entries[entries.length - 1][0]) ?? from;
    }
  }

  private async redisNowMs(): Promise<number> {
    const [seconds, microseconds] = await this.redis.time();
    return Number(seconds) * 1000 + Math.floor(Number(microseconds) / 1000);
  }
}

/** Read a channel message; null when it is not a request. */
export function parseChannelMessage(message: string): HeardInterrupt | null {
  let parsed: z.infer<typeof ChannelMessage>;
  try {
    parsed = ChannelMessage.parse(JSON.parse(message));
  } catch {
    return null;
  }
  const { id, ...request } = parsed;
  if (id === undefined) return { request, position: null };
  const position = parseStreamId(id);
  return position ? { request, position } : null;
}

/** Only the request's own fields, so a caller's extra properties never travel. */
function requestJson(request: InterruptRequest): string {
  const fields: InterruptRequest = { sessionId: request.sessionId };
  if (request.text !== undefined) fields.text = request.text;
  if (request.hard !== undefined) fields.hard = request.hard;
  if (request.beforeInboxId !== undefined) fields.beforeInboxId = request.beforeInboxId;
  return JSON.stringify(fields);
}

function requestFromEntry(fields: string[]): InterruptRequest | null {
  for (let i = 0; i + 1 < fields.length; i += 2) {
    if (fields[i] !== "request") continue;
    try {
      return RequestFields.parse(JSON.parse(fields[i + 1]));
    } catch {
      return null;
    }
  }
  return null;
}
