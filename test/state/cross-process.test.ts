// Two OS processes on one database (a SQLite file, or a PostgreSQL schema): the lease serialises
// them, a release wakes the other process through Redis pub/sub, a stale flush is fenced, and a
// SIGKILLed holder is reaped early.
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { dirname, join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import type { Redis } from "ioredis";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { RedisLeaseNotifier } from "../../src/bus/lease-notifier.js";
import { makeHolder, type StoreConfig } from "../../src/state/index.js";
import { newRedisClient, uniquePrefix } from "../support/redis.js";
import { storeBackends, type TestStore } from "../support/store-backends.js";
import type { HolderCommand, HolderReply } from "./fixtures/lease-holder.js";
import { contents, FAR_POLL_MS, FAR_WAIT_SECONDS, orStillWaiting, until } from "./helpers.js";

const here = dirname(fileURLToPath(import.meta.url));
const projectRoot = resolve(here, "..", "..");
const fixture = join(here, "fixtures", "lease-holder.ts");

type CommandInput = HolderCommand extends infer C ? (C extends { id: number } ? Omit<C, "id"> : never) : never;

class HolderProcess {
  private nextId = 1;
  private readonly pending = new Map<number, (reply: HolderReply) => void>();
  readonly exited: Promise<void>;

  private constructor(
    readonly child: ChildProcessWithoutNullStreams,
    readonly pid: number,
  ) {
    this.exited = new Promise((done) => child.once("exit", () => done()));
    createInterface({ input: child.stdout }).on("line", (line) => {
      const reply = JSON.parse(line) as HolderReply;
      if ("id" in reply) this.pending.get(reply.id)?.(reply);
    });
  }

  static async start(storeConfig: StoreConfig, channelPrefix: string): Promise<HolderProcess> {
    const child = spawn(process.execPath, ["--import", "tsx", fixture, JSON.stringify(storeConfig), channelPrefix], {
      cwd: projectRoot,
      env: process.env,
      stdio: ["pipe", "pipe", "pipe"],
    });
    let stderr = "";
    child.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const pid = await new Promise<number>((ready, fail) => {
      const timer = setTimeout(() => fail(new Error(`holder process did not start: ${stderr}`)), 20_000);
      const lines = createInterface({ input: child.stdout });
      lines.once("line", (line) => {
        clearTimeout(timer);
        lines.close();
        ready((JSON.parse(line) as { pid: number }).pid);
      });
      child.once("exit", (code) => fail(new Error(`holder process exited (${code}): ${stderr}`)));
    });
    return new HolderProcess(child, pid);
  }

  call(command: CommandInput, timeoutMs = 10_000): Promise<HolderReply> {
    const id = this.nextId++;
    return new Promise((answer, fail) => {
      const timer = setTimeout(() => fail(new Error(`holder process did not answer ${command.op}`)), timeoutMs);
      this.pending.set(id, (reply) => {
        clearTimeout(timer);
        this.pending.delete(id);
        answer(reply);
      });
      this.child.stdin.write(`${JSON.stringify({ ...command, id })}\n`);
    });
  }

  async result<T>(command: CommandInput): Promise<T> {
    const reply = await this.call(command);
    if (!("ok" in reply) || !reply.ok) throw new Error(`holder process failed ${command.op}: ${JSON.stringify(reply)}`);
    return reply.result as T;
  }

  async stop(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    this.child.kill("SIGKILL");
    await this.exited;
  }
}

let holderProcess: HolderProcess | null = null;
const redisClients: Redis[] = [];
const notifiers: RedisLeaseNotifier[] = [];

async function redisNotifier(prefix: string): Promise<RedisLeaseNotifier> {
  const publisher = newRedisClient();
  redisClients.push(publisher);
  const notifier = new RedisLeaseNotifier(publisher, null, prefix);
  notifiers.push(notifier);
  await notifier.ready();
  return notifier;
}

describe.each(storeBackends)("two OS processes on one database ($name)", (backend) => {
  let store: TestStore;
  beforeEach(() => {
    store = backend.create("xproc");
  });
  afterEach(async () => {
    await holderProcess?.stop();
    holderProcess = null;
    await store.cleanup();
    for (const notifier of notifiers.splice(0)) await notifier.close();
    for (const client of redisClients.splice(0)) client.disconnect();
  });

  it("A (child) holds and writes, B waits, B is admitted right after A's release via Redis, and A's late flush is fenced", async () => {
    const prefix = uniquePrefix("lease");
    // The poll, A's expiry (60 s) and B's deadline lie past the guard: only the release's wake-up
    // through Redis admits B before it.
    const pollIntervalMs = FAR_POLL_MS;
    const b = await store.open({ notifier: await redisNotifier(prefix), pollIntervalMs });
    holderProcess = await HolderProcess.start(store.config, prefix);
    const a = holderProcess;

    const holderA = await a.result<string>({ op: "holder", sessionId: "shared" });
    expect(holderA.startsWith(`pid=${a.pid}:`)).toBe(true);
    await a.result({ op: "create", sessionId: "shared" });
    expect(await a.result<boolean>({ op: "acquire", sessionId: "shared", holder: holderA, ttlSeconds: 60 })).toBe(true);
    await a.result({ op: "append", sessionId: "shared", holder: holderA, texts: ["a1"] });

    const holderB = makeHolder({ sessionId: "shared", platform: "test" });
    const onWait = vi.fn();
    const shouldAbort = vi.fn(() => false);
    const admission = b.acquireSessionTurnLease("shared", holderB, { ttlSeconds: 60, waitSeconds: FAR_WAIT_SECONDS, onWait, shouldAbort });
    await until(() => onWait.mock.calls.length > 0, 5000, "B to start waiting");
    await a.result({ op: "append", sessionId: "shared", holder: holderA, texts: ["a2"] });
    await a.result({ op: "release", sessionId: "shared", holder: holderA });

    expect(await orStillWaiting(admission, 15_000)).toBe(true);
    // Two attempts: the refused one, and the one the release woke.
    expect(shouldAbort).toHaveBeenCalledTimes(2);
    expect(onWait.mock.calls).toEqual([[0]]);
    expect(contents(await b.getMessages("shared"))).toEqual(["a1", "a2"]);

    await b.appendMessagesBatch("shared", [{ role: "user", content: "b1" }], { turnLeaseHolder: holderB });
    const late = await a.call({ op: "append", sessionId: "shared", holder: holderA, texts: ["late from A"] });
    expect(late).toMatchObject({ ok: false, name: "TurnLeaseLostError", code: "turn_lease" });
    expect(contents(await b.getMessages("shared"))).toEqual(["a1", "a2", "b1"]);
    await b.releaseSessionTurnLease("shared", holderB);
  });

  it("reaps a SIGKILLed holder on this host without waiting for its 60 s TTL", async () => {
    const prefix = uniquePrefix("lease");
    const b = await store.open({ pollIntervalMs: 250 });
    holderProcess = await HolderProcess.start(store.config, prefix);
    const a = holderProcess;
    const holderA = await a.result<string>({ op: "holder", sessionId: "s" });
    expect(await a.result<boolean>({ op: "acquire", sessionId: "s", holder: holderA, ttlSeconds: 60 })).toBe(true);

    const onWait = vi.fn();
    let admittedAt = 0;
    const admission = b.acquireSessionTurnLease("s", "B", { waitSeconds: 20, onWait }).then((ok) => {
      admittedAt = performance.now();
      return ok;
    });
    await until(() => onWait.mock.calls.length > 0, 5000, "B to start waiting");
    expect(await b.tryAcquireSessionTurnLease("s", "C")).toBe(false); // alive: not reaped
    const killedAt = performance.now();
    a.child.kill("SIGKILL");
    expect(await admission).toBe(true);
    expect(admittedAt - killedAt).toBeLessThan(1000);
    expect(onWait).toHaveBeenCalledTimes(1);
    expect((await b.getSessionTurnLease("s"))?.holder).toBe("B");
  });
});
