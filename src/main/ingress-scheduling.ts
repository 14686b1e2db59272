// The scheduling policy of serve's HTTP thread, when turns run apart from it (the workers thread,
// or another process). INGRESS_THREAD_SCHEDULING=realtime puts it under SCHED_FIFO: a request then
// never waits for a core behind a turn or another process, and at 60% of the gateway's maximum rate
// on two cores the ack's p99 fell from 14.6 to 5.7 ms. The default stays the normal policy: a thread
// that runs the moment anything arrives handles each arrival alone, where one that waits for a core
// gathers several into one pass (its ingress wrote 3 messages per commit instead of 11.6), and at
// the gateway's maximum that cost 5-20% of the messages a second, by the machine (bench/README.md,
// "The HTTP thread under SCHED_FIFO" and "A burst's first wave").
import { availableParallelism } from "node:os";
import type { Logger } from "pino";
import type { IngressThreadScheduling } from "./config.js";
import { realtimeThisThread } from "./thread-priority.js";

/** What the HTTP thread runs under, for the start-up log. */
export type IngressSchedulingOutcome = "realtime" | "normal" | "not allowed" | "one core";

export interface IngressSchedulingDeps {
  /** Puts this thread under SCHED_FIFO; resolves to whether the kernel reports it set. */
  setRealtime?: () => Promise<boolean>;
  cores?: number;
}

/**
 * Real-time where asked for and allowed. Not on one core, where a flood of requests would leave the
 * turns only what the kernel's real-time throttling keeps back (a twentieth).
 */
export async function ingressThreadPolicy(wanted: IngressThreadScheduling, deps: IngressSchedulingDeps = {}): Promise<IngressSchedulingOutcome> {
  if (wanted === "normal") return "normal";
  if ((deps.cores ?? availableParallelism()) < 2) return "one core";
  return (await (deps.setRealtime ?? realtimeThisThread)()) ? "realtime" : "not allowed";
}

/** serve's HTTP thread: its policy set as configured, and logged. */
export async function scheduleIngressThread(wanted: IngressThreadScheduling, logger: Pick<Logger, "info" | "warn">): Promise<IngressSchedulingOutcome> {
  const outcome = await ingressThreadPolicy(wanted);
  if (outcome === "realtime") logger.info({ ingressScheduling: outcome }, "HTTP thread under SCHED_FIFO");
  else if (outcome !== "normal") {
    logger.warn(
      { ingressScheduling: outcome },
      outcome === "one core"
        ? "INGRESS_THREAD_SCHEDULING=realtime is not applied on one core: the HTTP thread keeps the normal policy"
        : "SCHED_FIFO could not be set on the HTTP thread (it needs CAP_SYS_NICE or an RLIMIT_RTPRIO of 1, and util-linux's chrt); it keeps the normal policy",
    );
  }
  return outcome;
}
