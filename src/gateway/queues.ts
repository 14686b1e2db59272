// The two BullMQ queues: turn wake-ups and outbound deliveries. Job ids are derived from the
// durable rows ("inbox-<id>", "delivery-<id>"), so re-adding a job that exists is a no-op; a
// dead turn's wake-up also names the dead holder ("inbox-<id>-after-<hash>"), and a wake-up a
// turn hands on to its session's next row has an id of its own ("inbox-<id>-next-<random>").
import { createHash, randomUUID } from "node:crypto";
import { Queue, type ConnectionOptions, type Worker } from "bullmq";
import { Redis, type RedisOptions } from "ioredis";

export const TURN_QUEUE = "turns";
export const DELIVERY_QUEUE = "deliveries";

export interface TurnJobData {
  /** The conversation id of the inbox row (its session_id): the turn lease's key. */
  conversationId: string;
  inboxId: number;
  /** The row's platform (see WakeUp.platform); absent on jobs that only name the row. */
  platform?: string;
}

/** A turn job's data; the platform only when it is known. */
export function turnJobData(conversationId: string, inboxId: number, platform?: string): TurnJobData {
  return { conversationId, inboxId, ...(platform ? { platform } : {}) };
}

/** A job queued before the field had its name carries the conversation id as `sessionId`. */
interface EarlierTurnJobData {
  sessionId: string;
  inboxId: number;
}

export function conversationIdOfJob(data: TurnJobData | EarlierTurnJobData): string {
  return "conversationId" in data ? data.conversationId : data.sessionId;
}

export interface DeliveryJobData {
  deliveryId: number;
}

export const turnJobId = (inboxId: number): string => `inbox-${inboxId}`;
/**
 * The wake-up that redoes a dead holder's turn. Not `inbox-<id>`: the dead worker's job of that id
 * may still sit in the active list until BullMQ's lock lapses. Derived from the holder (a holder
 * string names one turn) so every process that finds the same dead holder adds the same job;
 * hashed, since holders contain ':' and BullMQ job ids may not.
 */
export const recoveryJobId = (inboxId: number, deadHolder: string): string =>
  `inbox-${inboxId}-after-${createHash("sha256").update(deadHolder).digest("hex").slice(0, 16)}`;
/**
 * The wake-up a finished turn hands on to its session's next row. An id of its own every time:
 * `inbox-<id>` may be the row's own job, still active on its way to return as a no-op (it saw the
 * lease held), and adding under its id would then add nothing. A wake-up too many is a no-op.
 */
export const handOnJobId = (inboxId: number): string => `inbox-${inboxId}-next-${randomUUID().slice(0, 13)}`;
/** A wake-up that failed in memory (local-wake-ups.ts), retried through the queue: an id of its own, as above. */
export const retryJobId = (inboxId: number): string => `inbox-${inboxId}-retry-${randomUUID().slice(0, 13)}`;
export const deliveryJobId = (deliveryId: number): string => `delivery-${deliveryId}`;

/** How long adding a wake-up may take before it counts as refused. */
const WAKE_UP_TIMEOUT_MS = 1500;

/** States of a job that has not started yet: it will read the row's conversation when it runs. */
const NOT_STARTED = new Set(["waiting", "delayed", "prioritized", "waiting-children"]);

/**
 * Make sure a wake-up for the row is to come: its own job when that has not started yet (the usual
 * case: the message arrived after the lease was released), else a handed-on one (handOnJobId).
 * False when Redis is down or slow (the reconciler then finds the row).
 */
export async function addHandOnWakeUp(queues: Pick<GatewayQueues, "turns" | "connection">, conversationId: string, inboxId: number, platform?: string): Promise<boolean> {
  if (queues.connection.status !== "ready") return false;
  try {
    // A state read costs a few Redis commands; another job's whole life costs many more.
    const ownJob = await withTimeout(queues.turns.getJobState(turnJobId(inboxId)), WAKE_UP_TIMEOUT_MS, "read a wake-up's state");
    if (NOT_STARTED.has(ownJob)) return true;
    // With the row's platform the next turn goes straight for the lease, without reading the row first.
    await withTimeout(queues.turns.add("turn", turnJobData(conversationId, inboxId, platform), { jobId: handOnJobId(inboxId) }), WAKE_UP_TIMEOUT_MS, "hand on a wake-up");
    return true;
  } catch {
    return false;
  }
}

/** How long a wake-up that failed in memory waits before its retry runs (BullMQ's first backoff step). */
const RETRY_DELAY_MS = 1000;

/** Retry a wake-up that failed in memory through the queue; false when Redis refused it (the reconciler then finds the row). */
export async function addRetryWakeUp(queues: Pick<GatewayQueues, "turns" | "connection">, conversationId: string, inboxId: number): Promise<boolean> {
  if (queues.connection.status !== "ready") return false;
  try {
    await withTimeout(queues.turns.add("turn", { conversationId, inboxId }, { jobId: retryJobId(inboxId), delay: RETRY_DELAY_MS }), WAKE_UP_TIMEOUT_MS, "retry a wake-up");
    return true;
  } catch {
    return false;
  }
}

export interface GatewayQueues {
  turns: Queue<TurnJobData>;
  deliveries: Queue<DeliveryJobData>;
  /** The producer connection: fails fast while Redis is down instead of buffering. */
  connection: Redis;
  close(): Promise<void>;
}

export function createQueues(redisOptions: RedisOptions, prefix: string): GatewayQueues {
  const connection = new Redis({
    ...redisOptions,
    // Fail fast when Redis is down: the inbox row is already durable and the reconciler enqueues later.
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    // Adds of concurrent requests leave in one socket write.
    enableAutoPipelining: true,
    retryStrategy: (times) => Math.min(50 * times, 1000),
  });
  connection.on("error", () => {
    // Reported through /health; ioredis reconnects on its own.
  });
  const shared = {
    connection,
    prefix,
    skipWaitingForReady: true,
    // The version check sends INFO at construction, which the fail-fast connection refuses before
    // it is ready; the failed check would poison the queue for good.
    skipVersionCheck: true,
  };
  const turns = new Queue<TurnJobData>(TURN_QUEUE, {
    ...shared,
    defaultJobOptions: { removeOnComplete: true, removeOnFail: 1000, attempts: 20, backoff: { type: "exponential", delay: 1000 } },
  });
  // Delivery retries follow the worker's backoff strategy (Retry-After aware).
  const deliveries = new Queue<DeliveryJobData>(DELIVERY_QUEUE, {
    ...shared,
    defaultJobOptions: { removeOnComplete: true, removeOnFail: 1000, attempts: 12, backoff: { type: "custom" } },
  });
  // Connection errors surface through /health and the reconciler; keep them off stderr.
  turns.on("error", () => undefined);
  deliveries.on("error", () => undefined);
  return {
    turns,
    deliveries,
    connection,
    async close() {
      await Promise.allSettled([turns.close(), deliveries.close()]);
      connection.disconnect();
    },
  };
}

/** Bound a Redis call so a down Redis answers within `ms`, never hangs an HTTP ack. */
export async function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} timed out after ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Close a BullMQ worker (it waits for its active jobs), but give up on it after `timeoutMs`: a
 * worker whose client is still reconnecting after a Redis restart never finishes closing (nor
 * disconnecting), which would hold a shutdown forever. Its disconnect is then only started. True
 * when it closed in time.
 */
export async function closeWorker(worker: Worker, timeoutMs: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const closed = await Promise.race([
    worker.close().then(() => true),
    new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), timeoutMs))),
  ]);
  clearTimeout(timer);
  if (!closed) void worker.disconnect().catch(() => undefined);
  return closed;
}

/** Connection options for a BullMQ Worker: it owns (creates and closes) its blocking clients. */
export function workerConnection(redisOptions: RedisOptions): ConnectionOptions {
  // ioredis' option type is wider than BullMQ's declared subset; the values are passed through as is.
  return { ...redisOptions, maxRetriesPerRequest: null } as ConnectionOptions;
}

/** Wait for a connection that is still connecting to become ready; rejects after `timeoutMs`. */
export async function untilReady(connection: Redis, timeoutMs: number): Promise<void> {
  if (connection.status === "ready") return;
  if (connection.status === "end" || connection.status === "close") throw new Error(`redis connection is ${connection.status}`);
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      connection.off("ready", onReady);
      reject(new Error(`redis not ready within ${timeoutMs} ms`));
    }, timeoutMs);
    const onReady = (): void => {
      clearTimeout(timer);
      resolve();
    };
    connection.once("ready", onReady);
  });
}
