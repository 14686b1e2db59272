// The gateway's own timing of its acks, read from /metrics: the whole answer at the server
// (`switchboard_http_ack_seconds`: headers read to answer written) and its durable step
// (`switchboard_ingress_accept_seconds`: the inbox row recorded, the wake-up handed on). Set
// beside the client's ack times, they tell how much of a slow ack the server explains and how
// much lies outside it (the request waiting in the socket, the answer waiting to be read).
// Also the workers thread's event-loop busy time (`switchboard_event_loop_busy_seconds_total`),
// which says whether the turns kept up with the load or ran flat out behind it.
import { BENCH_API_KEY } from "./gateway-process.js";
import { httpRequest } from "./http.js";

/** A histogram's count so far, and how many of those took 10 ms or less. */
export interface Times {
  count: number;
  within10ms: number;
}

export interface ServerTimes {
  /** Headers read to answer written, for one route. */
  answer: Times;
  /** The durable step (record + wake-up), for one platform. */
  accept: Times;
  /** The SQLite log's rewinds so far (each holds the write gate while it syncs). */
  walRewinds: number;
  /** Seconds the workers thread's event loop has spent running code so far, and when this was read. */
  workersLoop: { busySeconds: number; readAtMs: number };
}

export async function readServerTimes(gatewayUrl: string, route: string, platform: string): Promise<ServerTimes> {
  const res = await httpRequest(`${gatewayUrl}/metrics`, { headers: { authorization: `Bearer ${BENCH_API_KEY}` }, timeoutMs: 10_000 });
  if (res.status !== 200) throw new Error(`GET /metrics answered ${res.status}`);
  const lines = res.body.split("\n");
  const value = (name: string, labels: string[]): number => {
    const line = lines.find((l) => (labels.length === 0 ? l.startsWith(`${name} `) : l.startsWith(`${name}{`)) && labels.every((part) => l.includes(part)));
    return line ? Number(line.slice(line.lastIndexOf(" ") + 1)) : 0;
  };
  const times = (metric: string, label: string): Times => ({
    count: value(`${metric}_count`, [label]),
    within10ms: value(`${metric}_bucket`, [label, 'le="0.01"']),
  });
  return {
    answer: times("switchboard_http_ack_seconds", `route="${route}"`),
    accept: times("switchboard_ingress_accept_seconds", `platform="${platform}"`),
    walRewinds: value("switchboard_sqlite_wal_rewinds_total", []),
    workersLoop: { busySeconds: value("switchboard_event_loop_busy_seconds_total", ['loop="workers"']), readAtMs: performance.now() },
  };
}

/** How many took over 10 ms, of all counted. */
export interface OverTen {
  over: number;
  of: number;
}

/** Over 10 ms between two readings, of all counted between them. */
export function overTenMs(before: Times, after: Times): OverTen {
  const of = after.count - before.count;
  return { over: of - (after.within10ms - before.within10ms), of };
}

/** The share of the time between two readings that the workers thread's loop was busy, in percent. */
export function workersLoopBusyPercent(before: ServerTimes, after: ServerTimes): number {
  const elapsedMs = after.workersLoop.readAtMs - before.workersLoop.readAtMs;
  return elapsedMs > 0 ? (100 * 1000 * (after.workersLoop.busySeconds - before.workersLoop.busySeconds)) / elapsedMs : Number.NaN;
}
