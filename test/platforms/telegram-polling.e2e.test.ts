// Telegram long polling with two gateway processes (real OS processes started like a user starts
// them) sharing one SQLite file and one Redis: one polls, the other stands by. A kill -9 of the
// poller after it recorded updates but before Telegram got its confirming getUpdates, a restart,
// and a graceful stop: nothing lost, nothing answered twice, never two polls at once.
import type { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TELEGRAM_POLLER_LOCK } from "../../src/adapters/telegram/index.js";
import { parseHolder } from "../../src/state/holder.js";
import { FakeTelegram, type FakeChat, type FakeUpdate } from "../support/fake-telegram.js";
import { spawnGatewayProcess, startTestGateway, waitFor, type GatewayProcess, type TestGateway } from "../support/gateway.js";
import { newRedisClient } from "../support/redis.js";
import { settle, transcript } from "./support/probes.js";
import { inboxRowOfUpdate, sentTelegramReply, TELEGRAM_BOT_USERNAME, TELEGRAM_TOKEN, updateMessageId } from "./support/telegram.js";

describe("Telegram long polling across gateway processes", () => {
  let fake: FakeTelegram;
  /** Reads the shared database; runs no workers, so it never polls. */
  let reader: TestGateway;
  let redis: Redis;
  let lockKey: string;
  const processes: GatewayProcess[] = [];

  const holderPid = async (): Promise<number | null> => {
    const holder = await redis.get(lockKey);
    return holder ? (parseHolder(holder)?.pid ?? null) : null;
  };

  /** The process holding the poller lock, once it polls. */
  const poller = async (): Promise<GatewayProcess> =>
    waitFor(async () => {
      const pid = await holderPid();
      return processes.find((p) => p.pid === pid && p.child.exitCode === null && p.child.signalCode === null);
    }, 20_000, "a process holding the poller lock");

  /** Every update answered by exactly one bot message, replying to it, in its chat. */
  const expectAnsweredOnce = async (items: Array<{ chat: FakeChat; update: FakeUpdate }>): Promise<void> => {
    await settle(500);
    for (const { chat, update } of items) {
      const replies = fake.botMessagesIn(chat.id).filter((m) => m.replyTo === updateMessageId(update));
      expect(replies.map((m) => m.text), `replies to update ${update.update_id}`).toEqual([`Echo: ${(update.message as { text: string }).text}`]);
      const row = await inboxRowOfUpdate(reader.gateway, update);
      expect((await transcript(reader.gateway, row.session_id)).filter((l) => l.startsWith("assistant: "))).toHaveLength(1);
    }
  };

  beforeAll(async () => {
    fake = await FakeTelegram.start({ token: TELEGRAM_TOKEN, username: TELEGRAM_BOT_USERNAME });
    reader = await startTestGateway({
      http: false,
      workers: false,
      env: { TELEGRAM_BOT_TOKEN: TELEGRAM_TOKEN, TELEGRAM_API_URL: fake.url, ECHO_CHUNK_DELAY_MS: "100", LOG_LEVEL: "warn" },
    });
    lockKey = `${reader.env.SWITCHBOARD_QUEUE_PREFIX}:lock:${TELEGRAM_POLLER_LOCK}`;
    redis = newRedisClient();
    for (let i = 0; i < 2; i++) processes.push(await spawnGatewayProcess(["serve"], reader.env));
  }, 90_000);

  afterAll(async () => {
    await Promise.all(processes.map((p) => p.stop("SIGKILL")));
    redis?.disconnect();
    await reader?.stop();
    await fake?.close();
  });

  it("polls from one process while the other stands by, and answers a private message once with streamed edits", async () => {
    const active = await poller();
    await waitFor(() => fake.waitingPolls === 1, 10_000, "a long poll waiting");
    const { chat } = fake.privateChat();
    // Long enough (about 2.5 s at 100 ms a word) to stream past its first post (after 1 s).
    const update = fake.userMessage(chat, "hello by long polling one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty");
    fake.pushUpdates(update);

    await sentTelegramReply(reader.gateway, update);
    await expectAnsweredOnce([{ chat, update }]);
    const [reply] = fake.botMessagesIn(chat.id);
    expect(reply.history.length).toBeGreaterThanOrEqual(1);
    // The update was confirmed by the next poll, after it was recorded.
    await waitFor(() => fake.confirmedBelow > update.update_id, 10_000, "the update confirmed");
    expect(await holderPid()).toBe(active.pid);
    expect(fake.callsTo("deleteWebhook").length).toBeGreaterThanOrEqual(1);
    expect(fake.commands.map((c) => c.command)).toEqual(["new", "stop", "status", "help"]);
    expect({ overlaps: fake.overlaps, conflicts: fake.conflicts }).toEqual({ overlaps: 0, conflicts: 0 });
  }, 60_000);

  it("survives a kill -9 between recording and confirming: the standby takes over, the redelivered updates are duplicates", async () => {
    const victim = await poller();
    const standby = processes.find((p) => p !== victim);
    if (!standby) throw new Error("no standby process");
    await waitFor(() => fake.waitingPolls === 1, 10_000, "a long poll waiting");

    // The waiting poll gets three updates; the poller records and answers them, and its next
    // getUpdates (which would confirm them) is held before Telegram processes it.
    fake.holdGetUpdates();
    const items = ["first", "second", "third"].map((word) => {
      const { chat } = fake.privateChat();
      return { chat, update: fake.userMessage(chat, `${word} message before the crash`) };
    });
    fake.pushUpdates(...items.map((i) => i.update));
    for (const { update } of items) await sentTelegramReply(reader.gateway, update);
    await waitFor(() => fake.heldPolls === 1, 10_000, "the confirming poll held");
    expect(fake.pendingUpdates).toBe(3);

    victim.child.kill("SIGKILL");
    await victim.exited;
    await waitFor(() => fake.heldPolls === 0, 5_000, "the dead poller's connection closed");
    fake.releaseGetUpdates();

    // A dead holder on this host is taken over at once, not after the lock's TTL.
    const killedAt = Date.now();
    await waitFor(async () => (await holderPid()) === standby.pid, 15_000, "the standby holding the lock");
    expect(Date.now() - killedAt).toBeLessThan(10_000);
    await waitFor(() => fake.confirmedBelow > items[2].update.update_id, 15_000, "the redelivered updates confirmed");
    for (const { update } of items) expect(fake.handedOut.get(update.update_id)).toBe(2);

    // Restart the killed process: it stands by; the new poller keeps answering, once.
    processes.splice(processes.indexOf(victim), 1, await spawnGatewayProcess(["serve"], reader.env));
    const { chat } = fake.privateChat();
    const after = fake.userMessage(chat, "a message after the restart");
    fake.pushUpdates(after);
    await sentTelegramReply(reader.gateway, after);
    await expectAnsweredOnce([...items, { chat, update: after }]);
    expect(await holderPid()).toBe(standby.pid);
    expect({ overlaps: fake.overlaps, conflicts: fake.conflicts }).toEqual({ overlaps: 0, conflicts: 0 });
  }, 90_000);

  it("hands polling over at once on a graceful stop, losing nothing that arrived meanwhile", async () => {
    const active = await poller();
    const other = processes.find((p) => p !== active);
    if (!other) throw new Error("no standby process");
    await waitFor(() => fake.waitingPolls === 1, 10_000, "a long poll waiting");
    const items = ["during", "after"].map((word) => {
      const { chat } = fake.privateChat();
      return { chat, update: fake.userMessage(chat, `sent ${word} the handover`) };
    });
    fake.pushUpdates(items[0].update);
    const stopping = active.stop("SIGTERM");
    fake.pushUpdates(items[1].update);
    expect(await stopping).toBe(0);
    await waitFor(async () => (await holderPid()) === other.pid, 10_000, "the other process polling");
    for (const { update } of items) await sentTelegramReply(reader.gateway, update, 20_000);
    await expectAnsweredOnce(items);
    expect({ overlaps: fake.overlaps, conflicts: fake.conflicts }).toEqual({ overlaps: 0, conflicts: 0 });
  }, 60_000);
});
