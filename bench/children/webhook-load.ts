// The ingress benchmark's load generator in a process of its own: signed webhook deliveries at a
// steady rate, open loop (each leaves on schedule whatever the answers do), each ack timed from
// its send to its answer. Bodies and signatures are made before the clock starts and the process
// does nothing else, so what it times is the gateway's answer, not the runner's own garbage
// collection or signing work (the runner holds every earlier benchmark's heap). One process runs a
// warm-up and the load it precedes, on the same connections: a fresh generator's first sends
// (its code not yet optimized, its connections still to open) took 13-31 ms, which counted
// against the gateway.
import { monitorEventLoopDelay } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import { githubSignature } from "../../src/adapters/webhook/signing.js";
import { fromParent, toParent } from "../lib/child.js";
import { preparePost, RawHttpPool, type PreparedRequest } from "../lib/raw-http.js";

export interface WebhookLoadPlan {
  url: string;
  secret: string;
  /** Distinct per load, so deliveries never repeat an id. */
  run: string;
  ratePerS: number;
  seconds: number;
  chats: number;
}

export interface WebhookLoadResult {
  acksMs: number[];
  /** [status, count]; -1 is a network error. */
  statuses: [number, number][];
  /** How far behind schedule each delivery left, p99 (shows the generator kept up). */
  sendLagsMs: number[];
  /** This process's own event-loop delay over the load, p99 (ms). */
  loopDelayP99Ms: number;
}

export type WebhookLoadIn = { type: "load"; plan: WebhookLoadPlan };
export type WebhookLoadOut = { type: "ready" } | { type: "done"; result: WebhookLoadResult } | { type: "error"; message: string };

function deliveries(plan: WebhookLoadPlan): PreparedRequest[] {
  const total = Math.round(plan.ratePerS * plan.seconds);
  const url = new URL(plan.url);
  return Array.from({ length: total }, (_, i) => {
    const id = `${plan.run}-${i}`;
    const body = JSON.stringify({ id, chat_id: `chat-${i % plan.chats}`, user_id: "bench", text: `ingress message ${i}` });
    return preparePost(url, { "content-type": "application/json", "x-github-delivery": id, "x-hub-signature-256": githubSignature(plan.secret, body) }, body);
  });
}

/** Connections by server, kept from one load to the next. */
const pools = new Map<string, RawHttpPool>();

function poolFor(url: string): RawHttpPool {
  let pool = pools.get(url);
  if (!pool) {
    pool = new RawHttpPool(new URL(url));
    pools.set(url, pool);
  }
  return pool;
}

async function load(plan: WebhookLoadPlan): Promise<WebhookLoadResult> {
  const planned = deliveries(plan);
  const pool = poolFor(plan.url);
  const acksMs: number[] = [];
  const sendLagsMs: number[] = [];
  const statuses = new Map<number, number>();
  const send = async (request: PreparedRequest): Promise<void> => {
    const started = performance.now();
    let status: number;
    try {
      status = await pool.send(request);
    } catch {
      status = -1;
    }
    acksMs.push(performance.now() - started);
    statuses.set(status, (statuses.get(status) ?? 0) + 1);
  };
  const loopDelay = monitorEventLoopDelay({ resolution: 1 });
  loopDelay.enable();
  const inFlight: Promise<void>[] = [];
  const t0 = performance.now();
  for (let i = 0; i < planned.length; i++) {
    const due = t0 + (i * 1000) / plan.ratePerS;
    const wait = due - performance.now();
    if (wait > 1) await sleep(wait);
    sendLagsMs.push(Math.max(0, performance.now() - due));
    inFlight.push(send(planned[i] as PreparedRequest));
  }
  await Promise.all(inFlight);
  loopDelay.disable();
  return {
    acksMs,
    statuses: [...statuses.entries()],
    sendLagsMs,
    loopDelayP99Ms: loopDelay.percentile(99) / 1e6,
  };
}

fromParent<WebhookLoadIn>((message) => {
  load(message.plan).then(
    (result) => toParent<WebhookLoadOut>({ type: "done", result }),
    (err: unknown) => toParent<WebhookLoadOut>({ type: "error", message: String(err) }),
  );
});
toParent<WebhookLoadOut>({ type: "ready" });
