// One of the two processes of the lease handoff benchmark: a store (the shared SQLite file, or a
// PostgreSQL schema) with the gateway's Redis lease notifier, taking and releasing turns when the
// runner says so.
// argv: dbPath|postgresUrl redisUrl channelPrefix sessionId [schema]
import { Redis } from "ioredis";
import { RedisLeaseNotifier } from "../../src/bus/lease-notifier.js";
import { redisOptionsFromUrl } from "../../src/bus/redis-url.js";
import { isPostgresUrl, makeHolder, openStore } from "../../src/state/index.js";
import { fromParent, toParent } from "../lib/child.js";

export type HandoffCommand = { type: "acquire"; turn: number } | { type: "release"; turn: number };

export type HandoffMessage =
  | { type: "ready" }
  | { type: "waiting"; turn: number }
  | { type: "admitted"; turn: number; admittedNs: string; waited: boolean }
  | { type: "released"; turn: number; releaseNs: string }
  | { type: "error"; message: string };

const [target, redisUrl, channelPrefix, sessionId, schema] = process.argv.slice(2);
const options = redisOptionsFromUrl(redisUrl);
const publisher = new Redis({ ...options, maxRetriesPerRequest: 2 });
const subscriber = new Redis({ ...options, maxRetriesPerRequest: null });
const notifier = new RedisLeaseNotifier(publisher, subscriber, channelPrefix);
await notifier.ready();
const postgres = isPostgresUrl(target);
const store = await openStore({ databaseUrl: postgres ? target : null, databaseSchema: schema ?? "", dbPath: postgres ? "" : target }, { notifier });
const holders = new Map<number, string>();

async function acquire(turn: number): Promise<void> {
  const holder = makeHolder({ sessionId, platform: "bench" });
  holders.set(turn, holder);
  let waited = false;
  const ok = await store.acquireSessionTurnLease(sessionId, holder, {
    ttlSeconds: 30,
    waitSeconds: 30,
    onWait: () => {
      if (waited) return;
      waited = true;
      toParent<HandoffMessage>({ type: "waiting", turn });
    },
  });
  const admittedNs = process.hrtime.bigint().toString();
  if (!ok) throw new Error(`turn ${turn}: lease not acquired within 30 s`);
  // The turn's flush, fenced by the lease, as a real turn ends.
  await store.appendMessagesBatch(sessionId, [{ role: "assistant", content: `turn ${turn} by pid ${process.pid}` }], { turnLeaseHolder: holder });
  toParent<HandoffMessage>({ type: "admitted", turn, admittedNs, waited });
}

async function release(turn: number): Promise<void> {
  const holder = holders.get(turn);
  if (!holder) throw new Error(`turn ${turn} was never acquired here`);
  holders.delete(turn);
  const releaseNs = process.hrtime.bigint().toString();
  await store.releaseSessionTurnLease(sessionId, holder);
  toParent<HandoffMessage>({ type: "released", turn, releaseNs });
}

fromParent<HandoffCommand>((command) => {
  const work = command.type === "acquire" ? acquire(command.turn) : release(command.turn);
  work.catch((err: Error) => toParent<HandoffMessage>({ type: "error", message: err.message }));
});

process.on("SIGTERM", () => {
  void (async () => {
    await store.close();
    await notifier.close();
    publisher.disconnect();
    subscriber.disconnect();
    process.exit(0);
  })();
});
toParent<HandoffMessage>({ type: "ready" });
