// Lease handoff: two OS processes with a SessionDB on one file and the gateway's Redis lease
// notifier alternate turns on one session. Measured: from the holder's release call to the
// waiter's admission (process.hrtime is CLOCK_MONOTONIC, comparable across processes).
import { randomUUID } from "node:crypto";
import { join } from "node:path";
import { SessionDB } from "../src/state/index.js";
import type { HandoffCommand, HandoffMessage } from "./children/handoff-worker.js";
import { spawnChild, type BenchChild } from "./lib/child.js";
import { Progress } from "./lib/progress.js";
import type { BenchContext, BenchResult } from "./lib/result.js";
import { msBetween, round, summarize } from "./lib/stats.js";
import { benchPrefix } from "./lib/redis.js";

type Worker = BenchChild<HandoffCommand, HandoffMessage>;
type Msg<T extends HandoffMessage["type"]> = Extract<HandoffMessage, { type: T }>;

const is =
  <T extends HandoffMessage["type"]>(type: T, turn?: number) =>
  (m: HandoffMessage): m is Msg<T> =>
    m.type === type && (turn === undefined || (m as { turn?: number }).turn === turn);

export async function handoffBenchmark(ctx: BenchContext): Promise<BenchResult> {
  const handoffs = ctx.quick ? 100 : 500;
  const dbPath = join(ctx.workDir, "handoff.db");
  const sessionId = `handoff-${randomUUID().slice(0, 8)}`;
  const setup = new SessionDB(dbPath);
  await setup.createSession(sessionId, { source: "bench" });
  const channel = `${benchPrefix("handoff")}:lease-released`;
  const workers: Worker[] = [0, 1].map(() =>
    spawnChild<HandoffCommand, HandoffMessage>("handoff-worker.ts", [dbPath, ctx.redisUrl, channel, sessionId]),
  );
  const samples: number[] = [];
  let notWaited = 0;
  try {
    await Promise.all(workers.map((w) => w.next(is("ready"), 60_000)));
    workers[0].send({ type: "acquire", turn: 0 });
    await workers[0].next(is("admitted", 0));
    const progress = new Progress("lease handoffs", handoffs, ctx.progress);
    for (let turn = 1; turn <= handoffs; turn++) {
      const holder = workers[(turn - 1) % 2];
      const waiter = workers[turn % 2];
      // The waiter blocks on the held lease first, then the holder lets go.
      const waiting = waiter.next(is("waiting", turn), 30_000);
      const admitted = waiter.next(is("admitted", turn), 30_000);
      waiter.send({ type: "acquire", turn });
      await waiting;
      const released = holder.next(is("released", turn - 1), 30_000);
      holder.send({ type: "release", turn: turn - 1 });
      const [r, a] = await Promise.all([released, admitted]);
      if (!a.waited) notWaited++;
      samples.push(msBetween(BigInt(r.releaseNs), BigInt(a.admittedNs)));
      progress.tick();
    }
    progress.finish();
    const last = workers[handoffs % 2];
    last.send({ type: "release", turn: handoffs });
    await last.next(is("released", handoffs));
    const rows = await setup.getMessages(sessionId);
    if (rows.length !== handoffs + 1) throw new Error(`expected ${handoffs + 1} fenced writes, found ${rows.length}`);
  } finally {
    await Promise.all(workers.map((w) => w.stop()));
    await setup.close();
  }
  const s = summarize(samples);
  const notes = [
    `${handoffs} handoffs between two OS processes, each a SessionDB on one SQLite file wired to the Redis lease notifier as the gateway wires it; each turn ends with a fenced write.`,
    "Measured from the holder's releaseSessionTurnLease call to the moment the waiter's acquireSessionTurnLease resolves; the waiter was already blocked (onWait fired) every time.",
  ];
  if (notWaited) notes.push(`${notWaited} admission(s) did not wait (unexpected).`);
  return {
    name: "handoff",
    title: "Lease handoff between two worker processes",
    figures: [
      { key: "handoff_p50_ms", label: "handoff p50", value: round(s.p50, 3), unit: "ms", target: { op: "<=", value: 5 } },
      { key: "handoff_p99_ms", label: "handoff p99", value: round(s.p99, 3), unit: "ms", target: { op: "<=", value: 20 } },
      { key: "handoff_max_ms", label: "handoff max", value: round(s.max, 3), unit: "ms" },
    ],
    notes,
    series: [{ name: "lease handoff: release -> admission", samplesMs: samples, targetMs: 20 }],
  };
}
