// The Slack benchmark's workloads, the same for both systems: mentions sent as Slack sends them
// (signed event callbacks over keep-alive HTTP), their acks noted here, their replies noted by
// the ReplyTracker as the fake Slack Web API shows them.
import { setTimeout as sleep } from "node:timers/promises";
import type { FakeSlackApi } from "./fake-slack-api.js";
import { httpRequest, keepAliveAgent } from "./http.js";
import { readCpuMs } from "./proc.js";
import type { Progress } from "./progress.js";
import type { CommandCounts, CommandStatsReader } from "./redis-commands.js";
import { SlackConversation } from "./slack-events.js";
import type { ReplyTracker, TrackedMention } from "./slack-replies.js";
import { BENCH_SIGNING_SECRET, type SystemUnderTest } from "./slack-systems.js";
import { summarize } from "./stats.js";

export interface SlackShape {
  conversations: number;
  messages: number;
  steadyRatePerS: number;
  steadySeconds: number;
  /** Conversations the steady load is spread over (each gets rate/this messages per second). */
  steadyConversations: number;
  burstConversations: number;
  burstSeconds: number;
  /** Rounds per system, alternating. */
  rounds: number;
}

/** A reply not shown within this long is lost (the conversation goes on with its next message). */
const REPLY_TIMEOUT_MS = 20_000;
/** How long the open-loop workloads wait for their last replies. */
const DRAIN_TIMEOUT_MS = 30_000;
/** Trailing work of the last messages (job completion, ledger rows) still belongs to the window. */
export const SETTLE_MS = 500;

/** Sends mentions to one system and notes their acks; the tracker notes their replies. */
export class SlackDriver {
  private readonly agent = keepAliveAgent(512, 2_000);
  private tagCounter = 0;

  constructor(
    readonly tracker: ReplyTracker,
    private readonly runTag: string,
    /** The full reply a mention's text gets: the echo model's by default. */
    private readonly replyTo: (text: string) => string = (text) => `Echo: ${text}`,
  ) {}

  conversation(): SlackConversation {
    return new SlackConversation(BENCH_SIGNING_SECRET, `${this.runTag}${(this.tagCounter++).toString(36)}`);
  }

  async send(system: SystemUnderTest, conversation: SlackConversation): Promise<TrackedMention> {
    const delivery = conversation.next();
    const mention = this.tracker.track({ ...delivery, expectedReply: this.replyTo(delivery.text) }, process.hrtime.bigint());
    try {
      const res = await httpRequest(system.eventsUrl, { method: "POST", agent: this.agent, headers: delivery.headers, body: delivery.body, timeoutMs: 60_000 });
      mention.status = res.status;
    } catch (err) {
      mention.status = -1;
      mention.error = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
    }
    mention.ackNs = process.hrtime.bigint();
    return mention;
  }

  /** One conversation, closed loop: each message once the previous one's echo is shown. */
  async converse(system: SystemUnderTest, count: number, out: TrackedMention[], onSent?: () => void, keepGoing: () => boolean = () => true): Promise<void> {
    const conversation = this.conversation();
    for (let i = 0; i < count && keepGoing(); i++) {
      const mention = await this.send(system, conversation);
      out.push(mention);
      onSent?.();
      if (mention.status === 200) await this.tracker.waitFinal(mention, REPLY_TIMEOUT_MS);
    }
  }

  /** Waits until every accepted mention is answered, or the timeout passed. */
  async drain(mentions: readonly TrackedMention[], timeoutMs = DRAIN_TIMEOUT_MS): Promise<void> {
    await Promise.all(mentions.filter((m) => m.status === 200).map((m) => this.tracker.waitFinal(m, timeoutMs)));
  }

  close(): void {
    this.agent.destroy();
  }
}

export interface ClosedLoopRun {
  mentions: TrackedMention[];
  /** First send to the last echo shown. */
  seconds: number;
  cpuMs: number;
  redis: CommandCounts;
  slackCalls: Record<string, number>;
}

/** The closed-loop workload, with the server's CPU, Redis commands and Slack calls over its window. */
export async function closedLoop(
  driver: SlackDriver,
  system: SystemUnderTest,
  fake: FakeSlackApi,
  stats: CommandStatsReader,
  conversations: number,
  messages: number,
  progress: Progress | null,
): Promise<ClosedLoopRun> {
  const mentions: TrackedMention[] = [];
  const cpuBefore = readCpuMs(system.pid);
  const redisBefore = await stats.snapshot();
  const callsBefore = fake.callCounts();
  const started = process.hrtime.bigint();
  await Promise.all(Array.from({ length: conversations }, () => driver.converse(system, messages, mentions, () => progress?.tick())));
  const lastShown = mentions.reduce((latest, m) => (m.finalNs !== null && m.finalNs > latest ? m.finalNs : latest), started);
  await sleep(SETTLE_MS);
  const cpuAfter = readCpuMs(system.pid);
  const redis = stats.window(redisBefore, await stats.snapshot());
  const callsAfter = fake.callCounts();
  const slackCalls = Object.fromEntries(
    Object.entries(callsAfter)
      .map(([method, n]) => [method, n - (callsBefore[method] ?? 0)] as const)
      .filter(([, n]) => n > 0),
  );
  return { mentions, seconds: Number(lastShown - started) / 1e9, cpuMs: cpuAfter - cpuBefore, redis, slackCalls };
}

export interface SteadyRun {
  mentions: TrackedMention[];
  sendLagP99Ms: number;
}

/** Mentions at a fixed rate whatever the acks do, round-robin over their own conversations. */
export async function steadyLoad(driver: SlackDriver, system: SystemUnderTest, shape: SlackShape, progress: Progress | null): Promise<SteadyRun> {
  const conversations = Array.from({ length: shape.steadyConversations }, () => driver.conversation());
  const total = shape.steadyRatePerS * shape.steadySeconds;
  const mentions: TrackedMention[] = [];
  const sending: Promise<void>[] = [];
  const lags: number[] = [];
  const t0 = performance.now();
  for (let i = 0; i < total; i++) {
    const due = t0 + (i * 1000) / shape.steadyRatePerS;
    const wait = due - performance.now();
    if (wait > 1) await sleep(wait);
    lags.push(Math.max(0, performance.now() - due));
    sending.push(
      driver.send(system, conversations[i % conversations.length]).then((m) => {
        mentions.push(m);
        progress?.tick();
      }),
    );
  }
  await Promise.all(sending);
  await driver.drain(mentions);
  return { mentions, sendLagP99Ms: summarize(lags).p99 };
}

/** Burst: conversations all start at once and go on, closed loop, for `burstSeconds`. */
export async function burstLoad(driver: SlackDriver, system: SystemUnderTest, shape: SlackShape, progress: Progress | null): Promise<TrackedMention[]> {
  const mentions: TrackedMention[] = [];
  const until = performance.now() + shape.burstSeconds * 1000;
  const keepGoing = (): boolean => performance.now() < until;
  await Promise.all(Array.from({ length: shape.burstConversations }, () => driver.converse(system, Number.MAX_SAFE_INTEGER, mentions, () => progress?.tick(), keepGoing)));
  await driver.drain(mentions);
  return mentions;
}


/**
 * Uncounted: code paths, connections, the first users looked up, and a whole round of the closed
 * loop's shape on other conversations, so the rounds counted run code V8 has optimized (a short
 * warm-up leaves its compiler busy through the counted round).
 */
export async function warmUp(driver: SlackDriver, system: SystemUnderTest, shape: Pick<SlackShape, "conversations" | "messages">): Promise<void> {
  const warm: TrackedMention[] = [];
  await Promise.all(Array.from({ length: shape.conversations }, () => driver.converse(system, shape.messages, warm)));
  await sleep(200);
}
