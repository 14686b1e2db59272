// Lease handoff: two OS processes with a store (one SQLite file, then one PostgreSQL schema) and
// the gateway's Redis lease notifier alternate turns on one session. Measured: from the holder's
// release call to the waiter's admission (process.hrtime is CLOCK_MONOTONIC, comparable across
// processes).
import { randomUUID } from "node:crypto";
import type { HandoffCommand, HandoffMessage } from "./children/handoff-worker.js";
import { BACKEND_NAMES, openTarget, storeTarget, type Backend } from "./lib/backends.js";
import { spawnChild, type BenchChild } from "./lib/child.js";
import { Progress } from "./lib/progress.js";
import type { BenchContext, BenchResult, Figure, LatencySeries } from "./lib/result.js";
import { msBetween, round, summarize } from "./lib/stats.js";
import { benchPrefix } from "./lib/redis.js";

type Worker = BenchChild<HandoffCommand, HandoffMessage>;
type Msg<T extends HandoffMessage["type"]> = Extract<HandoffMessage, { type: T }>;

const is =
  <T extends HandoffMessage["type"]>(type: T, turn?: number) =>
  (m: HandoffMessage): m is Msg<T> =>
    m.type === type && (turn === undefined || (m as { turn?: number }).turn === turn);

interface Handoffs {
  samples: number[];
  notWaited: number;
}

async function measureHandoffs(ctx: BenchContext, backend: Backend, handoffs: number): Promise<Handoffs> {
  const target = await storeTarget(ctx, backend, "handoff");
  const sessionId = `handoff-${randomUUID().slice(0, 8)}`;
  const setup = await openTarget(target);
  await setup.createSession(sessionId, { source: "bench" });
  const channel = `${benchPrefix("handoff")}:lease-released`;
  const workers: Worker[] = [0, 1].map(() =>
    spawnChild<HandoffCommand, HandoffMessage>("handoff-worker.ts", [target.location, ctx.redisUrl, channel, sessionId, target.schema]),
  );
  const samples: number[] = [];
  let notWaited = 0;
  try {
    await Promise.all(workers.map((w) => w.next(is("ready"), 60_000)));
    workers[0].send({ type: "acquire", turn: 0 });
    await workers[0].next(is("admitted", 0));
    const progress = new Progress(`lease handoffs (${BACKEND_NAMES[backend]})`, handoffs, ctx.progress);
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
  return { samples, notWaited };
}

function handoffFigures(prefix: string, label: string, samples: number[]): Figure[] {
  const s = summarize(samples);
  return [
    { key: `${prefix}handoff_p50_ms`, label: `${label}handoff p50`, value: round(s.p50, 3), unit: "ms", target: { op: "<=", value: 5 } },
    { key: `${prefix}handoff_p99_ms`, label: `${label}handoff p99`, value: round(s.p99, 3), unit: "ms", target: { op: "<=", value: 20 } },
    { key: `${prefix}handoff_max_ms`, label: `${label}handoff max`, value: round(s.max, 3), unit: "ms" },
  ];
}

export async function handoffBenchmark(ctx: BenchContext): Promise<BenchResult> {
  const handoffs = ctx.quick ? 100 : 500;
  const sqlite = await measureHandoffs(ctx, "sqlite", handoffs);
  const figures = handoffFigures("", "", sqlite.samples);
  const series: LatencySeries[] = [{ name: "lease handoff (SQLite): release -> admission", samplesMs: sqlite.samples, targetMs: 20 }];
  const notes = [
    `${handoffs} handoffs between two OS processes on each backend, each process a store (one SQLite file; then one PostgreSQL schema) wired to the Redis lease notifier as the gateway wires it; each turn ends with a fenced write.`,
    "Measured from the holder's releaseSessionTurnLease call to the moment the waiter's acquireSessionTurnLease resolves; the waiter was already blocked (onWait fired) every time.",
  ];
  let notWaited = sqlite.notWaited;
  try {
    const pg = await measureHandoffs(ctx, "pg", handoffs);
    figures.push(...handoffFigures("pg_", "PostgreSQL: ", pg.samples));
    series.push({ name: "lease handoff (PostgreSQL): release -> admission", samplesMs: pg.samples, targetMs: 20 });
    notWaited += pg.notWaited;
  } catch (err) {
    // The SQLite figures stand; the PostgreSQL ones show as missed, with the reason.
    figures.push(...handoffFigures("pg_", "PostgreSQL: ", [NaN]));
    notes.push(`PostgreSQL: did not complete: ${(err as Error).message}`);
  }
  if (notWaited) notes.push(`${notWaited} admission(s) did not wait (unexpected).`);
  return { name: "handoff", title: "Lease handoff between two worker processes (SQLite, PostgreSQL)", figures, notes, series };
}
