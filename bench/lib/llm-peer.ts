// Switchboard and the Chat SDK peer on an LLM-bound Slack load: both ask the same fake model
// (streamed) and show the stream in Slack — Switchboard as a post and throttled edits, the peer
// with `thread.post(stream)` (Slack's streaming methods). Closed loop over many threads, in
// rounds A B B A as the Slack benchmark runs them, each round on a fresh server process.
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { fakeReply } from "./fake-llm-reply.js";
import { llmEnv, type FakeLlm } from "./fake-llm.js";
import { FakeSlackApi } from "./fake-slack-api.js";
import { readMemory } from "./proc.js";
import { Progress } from "./progress.js";
import { CommandStatsReader } from "./redis-commands.js";
import type { BenchContext } from "./result.js";
import { closedLoop, SlackDriver, warmUp } from "./slack-load.js";
import { ReplyTracker, summarizeReplies, type ReplySummary } from "./slack-replies.js";
import { BENCH_BOT_TOKEN, startPeer, startSwitchboard, SYSTEM_LABELS, type SystemName } from "./slack-systems.js";

export interface PeerShape {
  threads: number;
  mentions: number;
  /** Threads x 1 mention, uncounted, before each round. */
  warmUpThreads: number;
  /** Rounds per system: 1 is A B, 2 is A B B A. */
  rounds: number;
  /** Switchboard's WORKER_CONCURRENCY: every thread's turn at once, as the peer runs every handler at once. */
  concurrency: number;
}

export interface PeerRound {
  system: SystemName;
  turnsPerS: number;
  replies: ReplySummary;
  cpuMs: number;
  turns: number;
  peakRssMb: number;
  slackCalls: Record<string, number>;
}

function systemsOfRound(round: number): readonly SystemName[] {
  return round % 2 === 0 ? ["peer", "switchboard"] : ["switchboard", "peer"];
}

export async function measurePeerRounds(ctx: BenchContext, fake: FakeLlm, shape: PeerShape): Promise<PeerRound[]> {
  const slack = await FakeSlackApi.start(BENCH_BOT_TOKEN);
  const tracker = new ReplyTracker();
  slack.listen(tracker);
  const driver = new SlackDriver(tracker, Math.random().toString(36).slice(2, 6), fakeReply);
  const stats = await CommandStatsReader.connect(ctx.redisUrl);
  const rounds: PeerRound[] = [];
  try {
    for (let i = 0; i < shape.rounds; i++) {
      for (const name of systemsOfRound(i)) {
        const dir = join(ctx.workDir, `llm-peer-${name}-${i}`);
        mkdirSync(dir, { recursive: true });
        const options = { redisUrl: ctx.redisUrl, slackApiUrl: slack.url, dir };
        const system =
          name === "peer"
            ? await startPeer({ ...options, env: { BENCH_PEER_LLM_BASE_URL: fake.url, BENCH_PEER_LLM_API_KEY: "proc-peer", BENCH_PEER_LLM_MODEL: "fake-model" } })
            : await startSwitchboard({ ...options, env: { ...llmEnv(fake, "proc-serve"), WORKER_CONCURRENCY: String(shape.concurrency) } });
        try {
          await warmUp(driver, system, { conversations: shape.warmUpThreads, messages: 1 });
          const progress = new Progress(`LLM Slack: ${SYSTEM_LABELS[name]}, round ${i + 1}`, shape.threads * shape.mentions, ctx.progress);
          const closed = await closedLoop(driver, system, slack, stats, shape.threads, shape.mentions, progress);
          progress.finish();
          rounds.push({
            system: name,
            turnsPerS: closed.mentions.length / closed.seconds,
            replies: summarizeReplies(closed.mentions),
            cpuMs: closed.cpuMs,
            turns: closed.mentions.length,
            peakRssMb: readMemory(system.pid).peakMb,
            slackCalls: closed.slackCalls,
          });
        } finally {
          await system.stop();
        }
      }
    }
  } finally {
    stats.close();
    driver.close();
    await slack.close();
  }
  return rounds;
}
