// The event bus's writes to Redis, batched: every event published during one turn of the event
// loop (any session) goes out in one script run, in publish order, instead of one run each.
// Under load many turns publish at once, and a run costs a command of its own (EVALSHA) besides
// the XADD and PUBLISH it executes. A batch waits for the end of the current event-loop turn
// (setImmediate), well under a millisecond.
//
// Stored events: XADD into the session's stream (its id is the event id) and PUBLISH
// `<id> <body>` on the session's channel, in one atomic step, so the live order is the stream
// order. Live-only events (coalesced streamed text): PUBLISH `- <body>`, in order with the rest;
// a batch of those alone is sent as plain PUBLISHes (no script run).
import { createHash } from "node:crypto";
import type { Redis } from "ioredis";
import type { Logger } from "pino";

/** A batch is sent at once when it reaches this many events: one script run stays short. */
const MAX_BATCH = 64;
/** How a published message marks an event without a stream id. */
export const LIVE_ONLY_MARK = "-";

// KEYS: the streams of the stored entries, in order. ARGV[1] maxlen, ARGV[2] ttl, then 8 per
// entry: key index (0: live only), kind, data, ts, channel, body head, body tail, refresh-ttl
// (1/0). A stored entry's published body is head .. data .. tail, so its data (most of an event)
// crosses to Redis once; a live-only entry's body is its head alone.
// Without a refresh the XADD must not create the stream (NOMKSTREAM): a stream that is gone
// (expired, deleted) is created again with its TTL, never without one.
const BATCH_SCRIPT = `
local maxlen = ARGV[1]
local ttl = tonumber(ARGV[2])
local ids = {}
for i = 3, #ARGV, 8 do
  local k = tonumber(ARGV[i])
  if k == 0 then
    redis.call('PUBLISH', ARGV[i + 4], '${LIVE_ONLY_MARK} ' .. ARGV[i + 5])
    ids[#ids + 1] = ''
  else
    local key = KEYS[k]
    local fields = {'MAXLEN', '~', maxlen, '*', 'kind', ARGV[i + 1], 'data', ARGV[i + 2], 'ts', ARGV[i + 3]}
    local id = false
    if ttl > 0 and ARGV[i + 7] == '0' then id = redis.call('XADD', key, 'NOMKSTREAM', unpack(fields)) end
    if not id then
      id = redis.call('XADD', key, unpack(fields))
      if ttl > 0 then redis.call('EXPIRE', key, ttl) end
    end
    redis.call('PUBLISH', ARGV[i + 4], id .. ' ' .. ARGV[i + 5] .. ARGV[i + 2] .. ARGV[i + 6])
    ids[#ids + 1] = id
  end
end
return ids
`;
const BATCH_SCRIPT_SHA = createHash("sha1").update(BATCH_SCRIPT).digest("hex");

interface Entry {
  /** The stream key; null for a live-only event. */
  stream: string | null;
  kind: string;
  dataJson: string;
  ts: number;
  channel: string;
  /**
   * The message after the id is head + dataJson + tail for a stored event; a live-only event's
   * message (after its mark) is its head alone.
   */
  head: string;
  tail: string;
  refreshTtl: boolean;
  settle: ((id: string) => void) | null;
  fail: ((err: unknown) => void) | null;
}

export interface PublishBatchOptions {
  redis: Redis;
  /** Approximate stream length kept (`XADD MAXLEN ~`). */
  maxLen: number;
  /** Stream TTL in seconds (0: none). */
  ttlSeconds: number;
  logger?: Logger;
}

export class PublishBatch {
  private entries: Entry[] = [];
  private scheduled = false;

  constructor(private readonly options: PublishBatchOptions) {}

  /** Store and publish an event; resolves with its stream id once Redis ran the batch. */
  stored(event: { stream: string; kind: string; dataJson: string; ts: number; channel: string; head: string; tail: string; refreshTtl: boolean }): Promise<string> {
    return new Promise((resolve, reject) => this.add({ ...event, settle: resolve, fail: reject }));
  }

  /** Publish without storing (failures are logged: such an event is not meant to be reliable). */
  liveOnly(channel: string, body: string): void {
    this.add({ stream: null, kind: "", dataJson: "", ts: 0, channel, head: body, tail: "", refreshTtl: false, settle: null, fail: null });
  }

  private add(entry: Entry): void {
    this.entries.push(entry);
    if (this.entries.length >= MAX_BATCH) this.send();
    else if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => {
        this.scheduled = false;
        this.send();
      });
    }
  }

  private send(): void {
    const batch = this.entries;
    if (batch.length === 0) return;
    this.entries = [];
    const { redis } = this.options;
    if (batch.every((entry) => entry.stream === null)) {
      for (const entry of batch) redis.publish(entry.channel, `${LIVE_ONLY_MARK} ${entry.head}`).catch((err: unknown) => this.liveOnlyFailed(err));
      return;
    }
    const keys: string[] = [];
    const args: string[] = [String(this.options.maxLen), String(this.options.ttlSeconds)];
    for (const entry of batch) {
      if (entry.stream !== null) keys.push(entry.stream);
      args.push(entry.stream === null ? "0" : String(keys.length), entry.kind, entry.dataJson, String(entry.ts), entry.channel, entry.head, entry.tail, entry.refreshTtl ? "1" : "0");
    }
    run(redis, keys, args).then(
      (ids) => {
        batch.forEach((entry, i) => entry.settle?.(String(ids[i] ?? "")));
      },
      (err: unknown) => {
        for (const entry of batch) entry.fail?.(err);
        if (batch.some((entry) => entry.stream === null)) this.liveOnlyFailed(err);
      },
    );
  }

  private liveOnlyFailed(err: unknown): void {
    this.options.logger?.debug({ err }, "event bus: a live-only event was not published");
  }
}

async function run(redis: Redis, keys: string[], args: string[]): Promise<unknown[]> {
  let result: unknown;
  try {
    result = await redis.evalsha(BATCH_SCRIPT_SHA, keys.length, ...keys, ...args);
  } catch (err) {
    if (!String((err as Error).message).includes("NOSCRIPT")) throw err;
    result = await redis.eval(BATCH_SCRIPT, keys.length, ...keys, ...args);
  }
  return Array.isArray(result) ? result : [];
}
