// What a test reads back from a running gateway: inbox totals, transcripts, the deliveries
// ledger and the session's events.
import type { GatewayHandle } from "../../../src/main/server.js";
import type { GatewayEvent } from "../../../src/gateway/types.js";
import type { DeliveryRow, InboxRow } from "../../../src/state/types.js";
import { waitFor } from "../../support/gateway.js";

export async function inboxTotal(gateway: GatewayHandle): Promise<number> {
  const counts = await gateway.store.inboxCounts();
  return Object.values(counts).reduce((a, b) => a + b, 0);
}

/** The inbox row of a platform message, once it is recorded. */
export function inboxRowOf(gateway: GatewayHandle, platform: string, platformMessageId: string, timeoutMs = 5_000): Promise<InboxRow> {
  return waitFor(() => gateway.store.findInboxRow(platform, platformMessageId), timeoutMs, `inbox row ${platformMessageId}`);
}

/** The session's user and assistant messages as "role: content". */
export async function transcript(gateway: GatewayHandle, sessionId: string): Promise<string[]> {
  const rows = await gateway.store.getMessages(sessionId);
  return rows.filter((m) => m.role === "user" || m.role === "assistant").map((m) => `${m.role}: ${m.content ?? ""}`);
}

export async function deliveriesOf(gateway: GatewayHandle, sessionId: string): Promise<DeliveryRow[]> {
  return gateway.store.deliveriesForSession(sessionId);
}

export interface EventLog {
  events: GatewayEvent[];
  kinds(): string[];
  stop(): void;
}

/** Every event of the session from its start (replayed), then live ones. */
export async function recordEvents(gateway: GatewayHandle, sessionId: string): Promise<EventLog> {
  const events: GatewayEvent[] = [];
  const stop = await gateway.events.subscribe(sessionId, (event) => void events.push(event), { since: "0-0" });
  return { events, kinds: () => events.map((e) => e.kind), stop };
}

/** Resolves after `ms`: lets a wrongly scheduled second send show itself before counting. */
export function settle(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Stamps each call a fake records with the time it was recorded (the fakes keep no times):
 * returns a lookup from a recorded call to its time.
 */
export function stampCalls<T extends object>(calls: T[]): (call: T) => number {
  const times = new WeakMap<T, number>();
  const push = calls.push.bind(calls);
  calls.push = (...items: T[]): number => {
    const now = Date.now();
    for (const item of items) times.set(item, now);
    return push(...items);
  };
  return (call) => {
    const at = times.get(call);
    if (at === undefined) throw new Error("call was recorded before stamping started");
    return at;
  };
}
