// Model-based property test of the lease and the fence: random acquire / refresh / release /
// clock moves / fenced appends from several holders over two connections, checked step by step
// against a tiny reference model, plus the safety properties stated directly.
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TurnLeaseLostError, type SessionStore } from "../../src/state/index.js";
import { storeBackends, type TestStore } from "../support/store-backends.js";
import { deadPid, manualClock } from "./helpers.js";

const HOST = "model-host";
const LIVE_HOLDERS = ["pid=101:host=elsewhere:turn=a", "pid=102:host=elsewhere:turn=b", "pid=103:turn=c"];

type Op =
  | { kind: "acquire"; who: number; ttl: number; via: number }
  | { kind: "refresh"; who: number; ttl: number | null; via: number }
  | { kind: "release"; who: number; via: number }
  | { kind: "append"; who: number; via: number }
  | { kind: "advance"; seconds: number }
  | { kind: "crashedHolderTakes"; ttl: number };

const who = fc.integer({ min: 0, max: LIVE_HOLDERS.length - 1 });
const via = fc.integer({ min: 0, max: 1 });
const ttl = fc.constantFrom(1, 2, 5);
const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant("acquire" as const), who, ttl, via }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("refresh" as const), who, ttl: fc.option(ttl), via }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("release" as const), who, via }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant("append" as const), who, via }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant("advance" as const), seconds: fc.constantFrom(0.5, 1, 2, 3, 6) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("crashedHolderTakes" as const), ttl: fc.constant(3600) }) },
);

interface ModelLease {
  holder: string;
  expiresAt: number;
  ttl: number;
}

describe.each(storeBackends)("lease and fence model on $name", (backend) => {
  let store: TestStore;
  let crashedHolder: string;
  beforeAll(() => {
    store = backend.create("model");
    crashedHolder = `pid=${deadPid()}:host=${HOST}:turn=crashed`;
  });
  afterAll(async () => {
    await store.cleanup();
  });

  it("never two live holders, no write by a non-holder, no lost write by the holder", async () => {
    const clock = manualClock();
    const connections: SessionStore[] = [await store.open({ now: clock.now, hostname: HOST }), await store.open({ now: clock.now, hostname: HOST })];
    let run = 0;

    await fc.assert(
      fc.asyncProperty(fc.array(opArb, { minLength: 1, maxLength: 40 }), async (ops) => {
        const sessionId = `model-${run++}`;
        await connections[0].createSession(sessionId, { source: "model" });
        let lease: ModelLease | null = null;
        const transcript: string[] = [];
        /** What each live holder was told: its lease runs until this time (or it released). */
        const believedUntil = new Map<string, number>();
        let writes = 0;

        const modelAcquire = (holder: string, seconds: number): boolean => {
          const now = clock.value();
          if (lease && lease.holder !== holder && (lease.expiresAt <= now || lease.holder === crashedHolder)) lease = null;
          if (!lease) {
            lease = { holder, expiresAt: now + seconds, ttl: seconds };
            return true;
          }
          if (lease.holder === holder) {
            lease.expiresAt = now + seconds;
            lease.ttl = seconds;
            return true;
          }
          return false;
        };

        for (const op of ops) {
          const now = clock.value();
          if (op.kind === "advance") {
            clock.advance(op.seconds);
            continue;
          }
          if (op.kind === "crashedHolderTakes") {
            // A holder on this host that then died: only a takeover can reveal it is gone.
            expect(await connections[0].tryAcquireSessionTurnLease(sessionId, crashedHolder, { ttlSeconds: op.ttl })).toBe(
              modelAcquire(crashedHolder, op.ttl),
            );
            continue;
          }
          const db = connections[op.via];
          const holder = LIVE_HOLDERS[op.who];
          switch (op.kind) {
            case "acquire": {
              const expected = modelAcquire(holder, op.ttl);
              expect(await db.tryAcquireSessionTurnLease(sessionId, holder, { ttlSeconds: op.ttl })).toBe(expected);
              if (expected) believedUntil.set(holder, now + op.ttl);
              break;
            }
            case "refresh": {
              const current = lease as ModelLease | null;
              const expected = current?.holder === holder;
              if (current && expected) {
                current.ttl = op.ttl ?? current.ttl;
                current.expiresAt = now + current.ttl;
              }
              expect(await db.refreshSessionTurnLease(sessionId, holder, op.ttl === null ? {} : { ttlSeconds: op.ttl })).toBe(expected);
              if (current && expected) believedUntil.set(holder, current.expiresAt);
              break;
            }
            case "release": {
              if ((lease as ModelLease | null)?.holder === holder) lease = null;
              await db.releaseSessionTurnLease(sessionId, holder);
              believedUntil.delete(holder);
              break;
            }
            case "append": {
              const current = lease as ModelLease | null;
              const mayWrite = current?.holder === holder;
              const text = `w${writes++}:${op.who}`;
              const outcome = await db
                .appendMessagesBatch(sessionId, [{ role: "user", content: text }], { turnLeaseHolder: holder })
                .then(
                  () => "written" as const,
                  (err: unknown) => {
                    if (err instanceof TurnLeaseLostError) return "fenced" as const;
                    throw err;
                  },
                );
              // No write by a non-holder succeeds, and the holder's write is never refused.
              expect(outcome).toBe(mayWrite ? "written" : "fenced");
              if (current && mayWrite) {
                transcript.push(text);
                if (current.expiresAt <= now) current.expiresAt = now + current.ttl; // renewed by the fence
                believedUntil.set(holder, current.expiresAt);
              }
              break;
            }
          }

          // The store agrees with the model.
          const row = await connections[1 - op.via].getSessionTurnLease(sessionId);
          const modelRow = lease as ModelLease | null;
          expect(row ? { holder: row.holder, expiresAt: row.expires_at } : null).toEqual(
            modelRow ? { holder: modelRow.holder, expiresAt: modelRow.expiresAt } : null,
          );
          // Never two live holders: at most one holder was told it holds a lease that has not run out.
          const live = [...believedUntil].filter(([, until]) => until > clock.value());
          expect(live.length).toBeLessThanOrEqual(1);
        }

        // No lost write: exactly the holders' writes, in order.
        const stored = (await connections[0].getMessages(sessionId)).map((m) => m.content);
        expect(stored).toEqual(transcript);
      }),
      // Every PostgreSQL step is a round trip to the server: fewer runs there keep the suite short.
      { numRuns: backend.name === "sqlite" ? 150 : 75 },
    );
  });
});
