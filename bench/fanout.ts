// WebSocket fan-out: N clients (in their own process) subscribed to one session on one
// `switchboard serve` process; an event published through the Redis event bus — the path a
// worker's events take — must reach every client. Measured: per event, the time until the last
// client has it; per delivery, each client's latency; and the server process's resident memory.
import { randomUUID } from "node:crypto";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { Redis } from "ioredis";
import { EventBus } from "../src/bus/event-bus.js";
import { redisOptionsFromUrl } from "../src/bus/redis-url.js";
import type { WsClientsMessage } from "./children/ws-clients.js";
import { spawnChild } from "./lib/child.js";
import { BENCH_API_KEY, gatewayEnv, startGatewayProcess } from "./lib/gateway-process.js";
import { openFileLimit, readMemory, type MemoryReading } from "./lib/proc.js";
import { Progress } from "./lib/progress.js";
import type { BenchContext, BenchResult } from "./lib/result.js";
import { round, summarize } from "./lib/stats.js";
import { benchPrefix } from "./lib/redis.js";

type Msg<T extends WsClientsMessage["type"]> = Extract<WsClientsMessage, { type: T }>;

export async function fanoutBenchmark(ctx: BenchContext): Promise<BenchResult> {
  const clients = ctx.quick ? 1000 : 5000;
  const events = ctx.quick ? 10 : 50;
  // Each client is a socket in the client process and another in the server process.
  const limit = openFileLimit();
  if (limit !== null && limit < clients + 1024) {
    throw new Error(`the open file limit is ${limit}; ${clients} WebSocket clients need more: run \`ulimit -n ${clients * 2 + 1024}\` first`);
  }
  const dir = join(ctx.workDir, "fanout");
  mkdirSync(dir, { recursive: true });
  const prefix = benchPrefix("ws");
  const sessionId = `fanout-${randomUUID().slice(0, 8)}`;
  // Every client connects from loopback: raise the per-address cap (default 1,000) to fit them.
  const config = join(dir, "switchboard.yaml");
  writeFileSync(config, `ws:\n  max_connections: ${clients + 100}\n  max_connections_per_ip: ${clients + 100}\n`);
  const gateway = await startGatewayProcess(["serve"], gatewayEnv(dir, ctx.redisUrl, prefix, { SWITCHBOARD_CONFIG: config }));
  const redis = new Redis({ ...redisOptionsFromUrl(ctx.redisUrl), maxRetriesPerRequest: 2 });
  const bus = new EventBus({ redis, prefix });
  const wsUrl = `${(gateway.url as string).replace(/^http/, "ws")}/ws?token=${BENCH_API_KEY}`;
  const child = spawnChild<never, WsClientsMessage>("ws-clients.ts", [wsUrl, sessionId, String(clients), "100"]);
  const perEventMs: number[] = [];
  const perDeliveryMs: number[] = [];
  let idle: MemoryReading;
  let connected: MemoryReading;
  let after: MemoryReading;
  let alive = clients;
  try {
    idle = readMemory(gateway.pid);
    const connecting = new Progress(`connecting ${clients} clients`, clients, ctx.progress);
    const offProgress = child.on((m) => {
      if (m.type === "progress") connecting.set(m.subscribed);
    });
    const ready = await child.next((m): m is Msg<"ready"> => m.type === "ready", 180_000);
    offProgress();
    connecting.finish();
    if (ready.subscribed !== clients) throw new Error(`only ${ready.subscribed} of ${clients} clients subscribed`);
    await sleep(500);
    connected = readMemory(gateway.pid);
    const progress = new Progress("fan-out events", events, ctx.progress);
    for (let seq = 0; seq < events; seq++) {
      const done = child.next((m): m is Msg<"event-done"> => m.type === "event-done" && m.seq === seq, 30_000);
      const sentNs = process.hrtime.bigint();
      await bus.publish(sessionId, "status", { seq, sent_ns: sentNs.toString(), level: "lifecycle", text: "fan-out benchmark" });
      const result = await done;
      alive = result.alive;
      perEventMs.push(Math.max(...result.latenciesMs));
      perDeliveryMs.push(...result.latenciesMs);
      progress.tick();
      await sleep(100);
    }
    progress.finish();
    after = readMemory(gateway.pid);
  } finally {
    await child.stop();
    await bus.close();
    redis.disconnect();
    await gateway.stop();
  }
  const all = summarize(perEventMs);
  const each = summarize(perDeliveryMs);
  const rss = Math.max(connected.rssMb, after.rssMb);
  return {
    name: "fanout",
    title: `WebSocket fan-out: one event to ${clients.toLocaleString("en")} subscribers`,
    figures: [
      { key: "ws_fanout_p50_ms", label: "time to reach all clients, p50", value: round(all.p50), unit: "ms" },
      { key: "ws_fanout_p99_ms", label: "time to reach all clients, p99", value: round(all.p99), unit: "ms", target: { op: "<=", value: 200 } },
      { key: "ws_delivery_p99_ms", label: "per-client delivery p99", value: round(each.p99), unit: "ms" },
      { key: "ws_rss_mb", label: `server RSS with ${clients} clients`, value: round(rss, 1), unit: "MB", target: { op: "<=", value: 300 } },
      { key: "ws_rss_peak_mb", label: "server peak RSS (VmHWM)", value: round(after.peakMb, 1), unit: "MB" },
      { key: "ws_rss_idle_mb", label: "server RSS before clients", value: round(idle.rssMb, 1), unit: "MB" },
    ],
    notes: [
      `${events} events published with the gateway's EventBus (Redis stream + pub/sub) from another process; one \`switchboard serve\` process fans them out on /ws; ${clients} clients in a separate process (${alive} still connected at the end).`,
      "Time to reach all = from the publish call to the moment the last client got the frame; RSS read from /proc (MiB) after the clients subscribed and after the events, the larger shown.",
    ],
    series: [
      { name: `fan-out to ${clients} clients: last client`, samplesMs: perEventMs, targetMs: 200 },
      { name: "fan-out: each client's delivery", samplesMs: perDeliveryMs },
    ],
  };
}
