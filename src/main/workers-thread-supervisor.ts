// Runs the workers thread of `switchboard serve` and keeps it running: a thread that dies is
// started again (with backoff), after its turn leases are handed on. Its holders name this
// process's pid, which is alive, so turn recovery could not prove them dead before they expire
// (LEASE_TTL_SECONDS): the supervisor, which saw the thread die, finds them in the database (the
// holders naming this process: the main thread takes no leases), releases them itself and wakes a
// worker for each conversation with pending messages, as turn recovery does for a dead process.
// Nothing accepted is lost either way: the inbox rows are durable.
import { once } from "node:events";
import { Worker } from "node:worker_threads";
import type { Logger } from "pino";
import type { SessionStore } from "../state/types.js";
import { recoveryJobId, withTimeout, type GatewayQueues } from "../gateway/queues.js";
import type { McpServerStatus } from "../agent/tools/mcp/index.js";
import type { Spilled, WakeUp, WakeUpSink } from "../gateway/local-wake-ups.js";
import type { QueuedNotice } from "../gateway/queued-notices.js";
import type { TurnOutcome } from "../gateway/types.js";
import type { FromWorkersThread, ToWorkersThread, WorkersThreadData, WorkersThreadStatus } from "./workers-thread-protocol.js";

/** First restart delay; doubled per death in a row, up to the maximum. */
const RESTART_DELAY_MS = 250;
const MAX_RESTART_DELAY_MS = 30_000;
/** A thread that ran this long resets the backoff. */
const HEALTHY_AFTER_MS = 60_000;
const ENQUEUE_TIMEOUT_MS = 2_000;
/**
 * The thread's young generation, bounded: left alone its new space grows under load as the main
 * thread's does, and the process's peak memory with it. Under `npm start` the node flag
 * --max-semi-space-size=8 sets it to the same size: V8's flag outranks resourceLimits.
 */
const THREAD_YOUNG_GENERATION_MB = 16;

const RUNNING_SOURCES = import.meta.url.endsWith(".ts");
const ENTRY = new URL(RUNNING_SOURCES ? "./workers-thread.ts" : "./workers-thread.js", import.meta.url);

/**
 * What the thread runs. Built, the module itself; from the TypeScript sources (tsx), a bootstrap
 * that registers tsx in the thread first: a thread does not inherit the main thread's loader.
 */
function threadScript(): { entry: URL | string; eval: boolean } {
  if (!RUNNING_SOURCES) return { entry: ENTRY, eval: false };
  const tsx = import.meta.resolve("tsx/esm/api");
  return { entry: `import(${JSON.stringify(tsx)}).then((tsx) => { tsx.register(); return import(${JSON.stringify(ENTRY.href)}); });`, eval: true };
}

export interface WorkersThreadDeps {
  redisUrl: string;
  /** The main thread's store and queues: a dead thread's leases are handed on with them. */
  store: SessionStore;
  queues: GatewayQueues;
  logger: Logger;
  /** The outcomes of the thread's turns, for the main thread's requests that wait on them. */
  onOutcomes?: (outcomes: TurnOutcome[]) => void;
}

export class WorkersThreadSupervisor implements WakeUpSink {
  private worker: Worker | null = null;
  private running = false;
  private restarts = 0;
  private deathsInRow = 0;
  private stopping = false;
  private restartTimer: NodeJS.Timeout | null = null;
  private metricsRequests = 0;
  private readonly metricsWaiters = new Map<number, (metrics: object[]) => void>();
  /** The running thread's MCP servers as it last reported them; empty while no thread runs. */
  private mcp: Record<string, McpServerStatus> = {};
  private threadAnnouncer: string | null = null;

  constructor(private readonly deps: WorkersThreadDeps) {}

  /** Starts the first thread; rejects if it fails before its workers run. */
  start(): Promise<void> {
    return this.spawn(false);
  }

  /** The running thread's announcer (queued-notices.ts), as its ready message named it. */
  get announcer(): string | null {
    return this.running && !this.stopping ? this.threadAnnouncer : null;
  }

  /**
   * Hand the main thread's new rows' wake-ups to the running thread, which takes those it has free
   * slots for and adds jobs for the rest; null while none runs (ingress then adds jobs). One posted
   * just before the thread dies is lost with it: the rows are durable, and the next thread's
   * reconciler enqueues every pending row at its start.
   */
  offer(wakeUps: readonly WakeUp[], notices: readonly QueuedNotice[]): Spilled | null {
    const worker = this.worker;
    if (!worker || !this.running || this.stopping) return null;
    // The thread takes those it has free slots for and adds jobs for the rest itself.
    worker.postMessage({ type: "wake", wakeUps: [...wakeUps], notices: [...notices] } satisfies ToWorkersThread);
    return { rest: [], announced: Promise.resolve() };
  }

  mcpStatus(): Record<string, McpServerStatus> {
    return this.mcp;
  }

  status(): WorkersThreadStatus {
    return { running: this.running, thread_id: this.running ? (this.worker?.threadId ?? null) : null, restarts: this.restarts };
  }

  /** The thread's metrics (getMetricsAsJSON); none when it is down or does not answer within `timeoutMs`. */
  metrics(timeoutMs: number): Promise<object[]> {
    const worker = this.worker;
    if (!worker || !this.running) return Promise.resolve([]);
    const id = ++this.metricsRequests;
    return new Promise((resolve) => {
      const timer = setTimeout(() => done([]), timeoutMs);
      const done = (metrics: object[]): void => {
        clearTimeout(timer);
        this.metricsWaiters.delete(id);
        resolve(metrics);
      };
      this.metricsWaiters.set(id, done);
      worker.postMessage({ type: "metrics", id } satisfies ToWorkersThread);
    });
  }

  /** Terminates the thread at once, mid-turn, as a crash would: it is restarted and its turns redone (SIGUSR2). */
  crash(): void {
    if (this.stopping || !this.worker) return;
    this.deps.logger.warn({ threadId: this.worker.threadId }, "terminating the workers thread (SIGUSR2)");
    void this.worker.terminate();
  }

  /** Asks the thread to stop (running turns get SHUTDOWN_TIMEOUT_MS); terminates it after `deadlineMs`. */
  async stop(deadlineMs: number): Promise<void> {
    this.stopping = true;
    if (this.restartTimer) clearTimeout(this.restartTimer);
    const worker = this.worker;
    if (!worker) return;
    const exited = once(worker, "exit").then(([code]) => code as number);
    worker.postMessage({ type: "stop" } satisfies ToWorkersThread);
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), deadlineMs)));
    const code = await Promise.race([exited, deadline]);
    clearTimeout(timer);
    if (code === null) {
      this.deps.logger.error({ deadlineMs }, "the workers thread did not stop in time; terminating it");
      await worker.terminate();
    } else if (code !== 0) {
      this.deps.logger.warn({ code }, "the workers thread stopped with an error");
    }
    // A clean stop released every lease; a terminated thread may have left some.
    await this.handOnLeases();
  }

  private spawn(restart: boolean): Promise<void> {
    const data: WorkersThreadData = { redisUrl: this.deps.redisUrl };
    const script = threadScript();
    const worker = new Worker(script.entry, {
      eval: script.eval,
      workerData: data,
      name: "switchboard-workers",
      resourceLimits: { maxYoungGenerationSizeMb: THREAD_YOUNG_GENERATION_MB },
    });
    this.worker = worker;
    const startedAt = Date.now();
    let ready = false;
    return new Promise<void>((resolve, reject) => {
      worker.on("message", (message: FromWorkersThread) => {
        if (message.type === "ready") {
          ready = true;
          this.threadAnnouncer = message.announcer;
          this.running = true;
          this.deps.logger.info({ threadId: worker.threadId, restart }, "workers thread ready");
          resolve();
        } else if (message.type === "metrics") {
          this.metricsWaiters.get(message.id)?.(message.metrics);
        } else if (message.type === "mcp") {
          this.mcp = message.status;
        } else if (message.type === "outcomes") {
          this.deps.onOutcomes?.(message.outcomes);
        }
      });
      worker.on("error", (err) => this.deps.logger.error({ err: err.message, stack: err.stack, threadId: worker.threadId }, "the workers thread failed"));
      worker.once("exit", (code) => {
        this.running = false;
        this.mcp = {};
        if (this.worker === worker) this.worker = null;
        if (!ready) reject(new Error(`the workers thread exited (code ${code}) before its workers ran`));
        if (this.stopping || (!ready && !restart)) return;
        this.died(code, Date.now() - startedAt);
      });
    });
  }

  private died(code: number, ranForMs: number): void {
    if (ranForMs >= HEALTHY_AFTER_MS) this.deathsInRow = 0;
    const delayMs = Math.min(RESTART_DELAY_MS * 2 ** this.deathsInRow, MAX_RESTART_DELAY_MS);
    this.deathsInRow++;
    this.deps.logger.error({ code, restartInMs: delayMs }, "the workers thread died; handing on its leases and starting another");
    void this.handOnLeases().finally(() => {
      if (this.stopping) return;
      this.restartTimer = setTimeout(() => {
        this.restartTimer = null;
        this.restarts++;
        // A thread that fails to start dies like any other: its exit schedules the next try.
        this.spawn(true).catch((err: Error) => this.deps.logger.error({ err: err.message }, "the workers thread failed to start"));
      }, delayMs);
    });
  }

  /**
   * For each lease this process holds (only the thread takes leases, and it is gone): a wake-up job
   * for its conversation's pending head (the id turn recovery would use for this holder, so the two
   * add one job), then the release, which only a lease this very holder still has is subject to. A
   * failure leaves the lease to expire, and turn recovery takes it then.
   */
  private async handOnLeases(): Promise<void> {
    const { store, queues, logger } = this.deps;
    let leases: Array<{ conversationId: string; holder: string }>;
    try {
      leases = await store.sessionTurnLeasesOfThisProcess();
    } catch (err) {
      logger.warn({ err: (err as Error).message }, "could not list the dead workers thread's leases; they will expire");
      return;
    }
    for (const { conversationId, holder } of leases) {
      try {
        const [head] = await store.pendingInbox(conversationId, 1);
        if (head) {
          const job = { conversationId, inboxId: head.id };
          await withTimeout(queues.turns.add("turn", job, { jobId: recoveryJobId(head.id, holder) }), ENQUEUE_TIMEOUT_MS, "enqueue a wake-up");
        }
        await store.releaseSessionTurnLease(conversationId, holder);
        logger.info({ conversationId, holder, inboxId: head?.id ?? null }, "handed on a turn lease of the dead workers thread");
      } catch (err) {
        logger.warn({ conversationId, holder, err: (err as Error).message }, "could not hand on a lease of the dead workers thread; it will expire");
      }
    }
  }
}
