// Scale-out on an LLM-bound load: the same conversations through node 1's API, with turns run by
// `serve` alone, `serve` + 1 or 2 `worker` processes, or two `serve` nodes (one SQLite file, one
// Redis prefix per layout; the same WORKER_CONCURRENCY in every process). Each process calls the
// fake model under a key of its own, which gives its share of the model calls.
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { Redis } from "ioredis";
import { RedisKeys } from "../../src/bus/keys.js";
import { redisOptionsFromUrl } from "../../src/bus/redis-url.js";
import { PRESENCE_INTERVAL_MS } from "../../src/bus/worker-presence.js";
import type { FakeLlm } from "./fake-llm.js";
import { llmEnv } from "./fake-llm.js";
import { gatewayEnv, startGatewayProcess, type GatewayProcess } from "./gateway-process.js";
import { runConversations, type ConversationRun } from "./llm-chat-load.js";
import { Progress } from "./progress.js";
import { benchPrefix } from "./redis.js";
import type { BenchContext } from "./result.js";

export type LayoutName = "serve" | "1_worker" | "2_workers" | "2_nodes";

interface LayoutSpec {
  label: string;
  /** The processes after node 1's `serve`, each with its caller key. */
  others: Array<{ args: string[]; caller: string }>;
}

export const LAYOUTS: Record<LayoutName, LayoutSpec> = {
  serve: { label: "serve alone", others: [] },
  "1_worker": { label: "serve + 1 worker", others: [{ args: ["worker"], caller: "proc-worker-1" }] },
  "2_workers": {
    label: "serve + 2 workers",
    others: [
      { args: ["worker"], caller: "proc-worker-1" },
      { args: ["worker"], caller: "proc-worker-2" },
    ],
  },
  "2_nodes": { label: "two serve nodes, load on node 1", others: [{ args: ["serve"], caller: "proc-serve-2" }] },
};

const NODE_1 = "proc-serve";

export interface ScaleShape {
  conversations: number;
  messages: number;
  concurrency: number;
}

export interface LayoutRun {
  layout: LayoutName;
  run: ConversationRun;
  /** Share of the counted model calls, by process (caller key), every process of the layout listed. */
  shares: Record<string, number>;
  modelCalls: number;
}

export async function measureLayout(ctx: BenchContext, fake: FakeLlm, layout: LayoutName, shape: ScaleShape): Promise<LayoutRun> {
  const spec = LAYOUTS[layout];
  const dir = join(ctx.workDir, `llm-scale-${layout}`);
  mkdirSync(dir, { recursive: true });
  const prefix = benchPrefix(`llm-${layout}`);
  const env = gatewayEnv(dir, ctx.redisUrl, prefix, { WORKER_CONCURRENCY: String(shape.concurrency) });
  const processes: GatewayProcess[] = [];
  try {
    // Node 1 first: it creates the store the others open.
    const node1 = await startGatewayProcess(["serve"], { ...env, ...llmEnv(fake, NODE_1) });
    processes.push(node1);
    for (const other of spec.others) processes.push(await startGatewayProcess(other.args, { ...env, ...llmEnv(fake, other.caller) }));
    const url = node1.url as string;
    await untilEveryProcessIsCounted(ctx.redisUrl, prefix, 1 + spec.others.length);
    // Uncounted: connections to the model and the store, the first turn's code paths.
    await runConversations(url, shape.concurrency, 1);
    fake.reset();
    const progress = new Progress(`LLM scale-out: ${spec.label}`, shape.conversations * shape.messages, ctx.progress);
    const run = await runConversations(url, shape.conversations, shape.messages, progress);
    progress.finish();
    const calls = await fake.calls();
    const modelCalls = Object.values(calls).reduce((a, b) => a + b, 0);
    const shares: Record<string, number> = {};
    for (const caller of [NODE_1, ...spec.others.map((o) => o.caller)]) shares[caller] = modelCalls > 0 ? (calls[caller] ?? 0) / modelCalls : Number.NaN;
    return { layout, run, shares, modelCalls };
  } finally {
    await Promise.all(processes.map((p) => p.stop()));
  }
}

/**
 * Every process with workers announces itself every PRESENCE_INTERVAL_MS and counts the others at
 * the same beat (bus/worker-presence.ts): once all are in the set, each has counted the others
 * within one more interval, as a node added to a running deployment is within seconds.
 */
async function untilEveryProcessIsCounted(redisUrl: string, prefix: string, processes: number): Promise<void> {
  const redis = new Redis(redisOptionsFromUrl(redisUrl));
  const key = new RedisKeys(prefix).turnWorkers;
  try {
    const deadline = Date.now() + 30_000;
    while ((await redis.zcard(key)) < processes) {
      if (Date.now() > deadline) throw new Error(`only ${await redis.zcard(key)} of ${processes} processes announced their workers`);
      await sleep(100);
    }
  } finally {
    redis.disconnect();
  }
  await sleep(PRESENCE_INTERVAL_MS * 2);
}
