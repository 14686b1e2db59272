// The raw BullMQ baseline's consumer, in its own process like the gateway: a Worker on the same
// queue name, prefix and worker options the gateway uses, with an empty processor.
// argv: redisUrl prefix concurrency
import { Worker } from "bullmq";
import { TURN_QUEUE, workerConnection, type TurnJobData } from "../../src/gateway/queues.js";
import { redisOptionsFromUrl } from "../../src/bus/redis-url.js";
import { fromParent, toParent } from "../lib/child.js";

/** Runner -> worker: report when this many jobs (counted since start) have completed. */
export type BullmqWorkerCommand = { type: "expect"; total: number };

export type BullmqWorkerMessage =
  | { type: "ready" }
  | { type: "progress"; completed: number }
  | { type: "done"; completed: number; lastCompletedNs: string };

const [redisUrl, prefix, concurrencyArg] = process.argv.slice(2);
let completed = 0;
let expected = Number.POSITIVE_INFINITY;

const reportIfDone = (): void => {
  if (completed < expected) return;
  toParent<BullmqWorkerMessage>({ type: "done", completed, lastCompletedNs: process.hrtime.bigint().toString() });
  expected = Number.POSITIVE_INFINITY;
};

const worker = new Worker<TurnJobData>(TURN_QUEUE, async () => undefined, {
  connection: workerConnection(redisOptionsFromUrl(redisUrl)),
  prefix,
  concurrency: Number(concurrencyArg),
  lockDuration: 15_000,
  stalledInterval: 5_000,
  maxStalledCount: 5,
});
worker.on("error", (err) => console.error(`bullmq baseline worker: ${err.message}`));
worker.on("completed", () => {
  completed++;
  if (completed % 250 === 0) toParent<BullmqWorkerMessage>({ type: "progress", completed });
  reportIfDone();
});

fromParent<BullmqWorkerCommand>((command) => {
  expected = command.total;
  reportIfDone();
});

await worker.waitUntilReady();
toParent<BullmqWorkerMessage>({ type: "ready" });

process.on("SIGTERM", () => {
  void worker.close().finally(() => process.exit(0));
});
