// Wake-ups handed over in memory die with their process. `serve` (its workers in a thread, the
// default in-process wake-ups) accepts messages of several conversations while its one worker
// slot is busy, so most wait in its memory with no BullMQ job; it is killed with SIGKILL. A
// `worker` process that was already running (its start-up reconciler long done) finds them:
// turn recovery wakes the dead holder's conversation at once and every conversation nobody holds
// once its head is a lease TTL old. Every message is answered once, in order.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { openStore, type SessionStore } from "../../src/state/index.js";
import { loadConfig } from "../../src/main/config.js";
import { spawnGatewayProcess, testGatewayEnv, waitFor, type GatewayProcess } from "../support/gateway.js";
import { makeTempDir } from "../support/tmp.js";
import { postWebhook, startCallbackSink, webhookConfig, type CallbackSink } from "./http.js";
import { transcriptProblems } from "./transcript.js";

const CHATS = 4;
const PER_CHAT = 2;
/** Ten words at 150 ms: a turn lasts about 1.5 s, so the kill finds most messages waiting. */
const WORDS = Array.from({ length: 10 }, (_, i) => `w${i}`).join(" ");

describe("wake-ups lost with a killed serve process", () => {
  const temp = makeTempDir("sb-lost-wakeups");
  const processes: GatewayProcess[] = [];
  let sink: CallbackSink | null = null;
  let store: SessionStore | null = null;

  afterAll(async () => {
    await Promise.all(processes.map((p) => p.stop("SIGKILL")));
    await store?.close();
    await sink?.close();
    temp.cleanup();
  });

  it("are found by a running worker process: every message answered once, in order", async () => {
    sink = await startCallbackSink();
    const configFile = join(temp.dir, "switchboard.yaml");
    writeFileSync(configFile, webhookConfig(sink.url));
    const env = testGatewayEnv(temp.dir, {
      SWITCHBOARD_CONFIG: configFile,
      ECHO_CHUNK_DELAY_MS: "150",
      LEASE_TTL_SECONDS: "5",
      TURN_RECOVERY_INTERVAL_MS: "500",
      WORKER_CONCURRENCY: "1",
    });
    const worker = await spawnGatewayProcess(["worker"], { ...env, LOG_LEVEL: "info" });
    processes.push(worker);
    const serve = await spawnGatewayProcess(["serve"], env);
    processes.push(serve);
    store = await openStore(loadConfig(env));

    const texts = new Map<string, string[]>();
    for (let m = 0; m < PER_CHAT; m++) {
      for (let c = 0; c < CHATS; c++) {
        const chat = `lost-${c}`;
        const text = `${chat} m${m} ${WORDS}`;
        const ack = await postWebhook(serve.url as string, { id: `${chat}-${m}`, chat_id: chat, text });
        expect(ack.status).toBe(202);
        texts.set(chat, [...(texts.get(chat) ?? []), text]);
      }
    }
    // The serve process is mid-turn on one conversation; the rest wait in its memory.
    await waitFor(async () => (await store!.inboxCounts()).pending === CHATS * PER_CHAT || null, 10_000, "every message recorded");
    await waitFor(async () => {
      const sessions = await store!.listSessions({ limit: 100 });
      const leases = await Promise.all(sessions.map((s) => store!.getSessionTurnLease(s.id)));
      return leases.some((l) => l?.holder.startsWith(`pid=${serve.pid}:`)) || null;
    }, 10_000, "serve to hold a turn lease");
    serve.child.kill("SIGKILL");
    await serve.exited;

    await waitFor(async () => (await store!.inboxCounts()).pending === 0 || null, 40_000, "every message answered after the kill", 200);
    expect(worker.output()).toContain("woke conversations whose pending messages nobody had taken");
    const sessions = await store.listSessions({ limit: 100 });
    const problems: string[] = [];
    for (const [chat, expected] of texts) {
      const session = sessions.find((s) => s.chat_id === chat);
      if (!session) problems.push(`${chat}: no session`);
      else problems.push(...(await transcriptProblems(store, session.id, expected)));
    }
    expect(problems).toEqual([]);
    // Each message's reply went out once.
    await waitFor(() => [...sink!.replies.values()].flat().length >= CHATS * PER_CHAT || null, 20_000, "every reply delivered");
    for (const [delivery, replies] of sink.replies) expect(replies, delivery).toHaveLength(1);
  }, 120_000);
});
