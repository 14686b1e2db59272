// The gateway's own timing of the durable part of an ack (record the inbox row, hand on its
// wake-up: `switchboard_ingress_accept_seconds`), read from /metrics. Set beside the client's
// ack times, it tells how much of a slow ack the server's durable step explains and how much
// lies outside it (reading and answering the request, waiting for a core).
import { BENCH_API_KEY } from "./gateway-process.js";
import { httpRequest } from "./http.js";

const METRIC = "switchboard_ingress_accept_seconds";

export interface AcceptTimes {
  /** Accepted messages counted so far. */
  count: number;
  /** Of them, accepted within 10 ms. */
  within10ms: number;
}

export async function readAcceptTimes(gatewayUrl: string, platform: string): Promise<AcceptTimes> {
  const res = await httpRequest(`${gatewayUrl}/metrics`, { headers: { authorization: `Bearer ${BENCH_API_KEY}` }, timeoutMs: 10_000 });
  if (res.status !== 200) throw new Error(`GET /metrics answered ${res.status}`);
  const value = (name: string, labels: string[]): number => {
    const line = res.body.split("\n").find((l) => l.startsWith(`${name}{`) && labels.every((label) => l.includes(label)));
    return line ? Number(line.slice(line.lastIndexOf(" ") + 1)) : 0;
  };
  const platformLabel = `platform="${platform}"`;
  return {
    count: value(`${METRIC}_count`, [platformLabel]),
    within10ms: value(`${METRIC}_bucket`, [platformLabel, 'le="0.01"']),
  };
}

/** Accepts over 10 ms between two readings. */
export function overTenMs(before: AcceptTimes, after: AcceptTimes): { over: number; of: number } {
  const of = after.count - before.count;
  return { over: of - (after.within10ms - before.within10ms), of };
}
