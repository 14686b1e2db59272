// The two Slack bots the Slack benchmark compares, each started as its own OS process against
// the same fake Slack Web API and the same Redis: the Chat SDK peer, and `switchboard serve` with
// Slack on and the echo model in its default one-process layout.
import { mkdirSync } from "node:fs";
import type { PeerCommand, PeerMessage } from "../children/peer-chat-sdk.js";
import { spawnChild } from "./child.js";
import { gatewayEnv, startGatewayProcess } from "./gateway-process.js";
import { benchPrefix } from "./redis.js";

export const BENCH_SIGNING_SECRET = "bench-slack-signing-secret";
export const BENCH_BOT_TOKEN = "xoxb-0000000000-0000000000000-benchbenchbenchbenchbenc";

export interface PeerQueueStats {
  queued: number;
  /** Answered only through a later message. */
  skipped: number;
  /** Queued and never taken off the queue. */
  stranded: number;
}

export type SystemName = "peer" | "switchboard";

export const SYSTEM_LABELS: Record<SystemName, string> = { peer: "Chat SDK", switchboard: "Switchboard" };

export interface SystemUnderTest {
  name: SystemName;
  /** Where Slack posts event callbacks. */
  eventsUrl: string;
  /** The server process (its CPU and memory are the system's). */
  pid: number;
  /** The peer: what its queue strategy did with messages that arrived while their thread was busy. */
  queueStats?: () => Promise<PeerQueueStats>;
  stop(): Promise<void>;
}

export interface StartOptions {
  redisUrl: string;
  slackApiUrl: string;
  /** A scratch folder for this start (Switchboard's database). */
  dir: string;
  /** Extra node flags for the server process (profiling); Switchboard only. */
  nodeArgs?: string[];
  /** Extra environment for the server process. */
  env?: Record<string, string>;
}

export async function startPeer(options: StartOptions): Promise<SystemUnderTest> {
  const child = spawnChild<PeerCommand, PeerMessage>("peer-chat-sdk.ts", [options.redisUrl, benchPrefix("peer"), options.slackApiUrl], {
    BENCH_SLACK_SIGNING_SECRET: BENCH_SIGNING_SECRET,
    BENCH_SLACK_BOT_TOKEN: BENCH_BOT_TOKEN,
    ...options.env,
  });
  try {
    const ready = await child.next((m): m is Extract<PeerMessage, { type: "ready" }> => m.type === "ready", 60_000);
    const queueStats = async (): Promise<PeerQueueStats> => {
      const reply = child.next((m): m is Extract<PeerMessage, { type: "stats" }> => m.type === "stats", 10_000);
      child.send({ type: "stats" });
      const { queued, skipped, stranded } = await reply;
      return { queued, skipped, stranded };
    };
    return { name: "peer", eventsUrl: ready.eventsUrl, pid: child.pid, queueStats, stop: () => child.stop() };
  } catch (err) {
    await child.stop();
    throw err;
  }
}

export async function startSwitchboard(options: StartOptions): Promise<SystemUnderTest> {
  mkdirSync(options.dir, { recursive: true });
  const env = gatewayEnv(options.dir, options.redisUrl, benchPrefix("slack"), {
    SLACK_SIGNING_SECRET: BENCH_SIGNING_SECRET,
    SLACK_BOT_TOKEN: BENCH_BOT_TOKEN,
    SLACK_API_URL: options.slackApiUrl,
    ...options.env,
  });
  const gateway = await startGatewayProcess(["serve"], env, 60_000, options.nodeArgs ?? []);
  return {
    name: "switchboard",
    eventsUrl: `${gateway.url}/slack/events`,
    pid: gateway.pid,
    async stop() {
      await gateway.stop();
    },
  };
}
