// The access policy's pairings on both store backends: one live code per user (shown once), an
// approval that every store on the database sees, expiry, listing and revocation.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { SessionStore } from "../../src/state/types.js";
import { storeBackends, type TestStore } from "../support/store-backends.js";

describe.each(storeBackends)("pairings on $name", (backend) => {
  let db: TestStore;
  let clock: number;
  let store: SessionStore;
  beforeEach(async () => {
    db = backend.create("pairings");
    clock = 1_000_000;
    store = await db.open({ now: () => clock });
  });
  afterEach(async () => {
    await db.cleanup();
  });

  it("keeps one live code per user, fresh only when it is recorded", async () => {
    expect(await store.pairingCodeFor("telegram", "42", "AAAA-1111", 600)).toEqual({ code: "AAAA-1111", fresh: true });
    // The same user again: the live code, not shown again.
    expect(await store.pairingCodeFor("telegram", "42", "BBBB-2222", 600)).toEqual({ code: "AAAA-1111", fresh: false });
    // Another user (or the same id on another platform) gets a code of their own.
    expect(await store.pairingCodeFor("slack", "42", "CCCC-3333", 600)).toEqual({ code: "CCCC-3333", fresh: true });
    // Once it expired, a new code.
    clock += 601;
    expect(await store.pairingCodeFor("telegram", "42", "DDDD-4444", 600)).toEqual({ code: "DDDD-4444", fresh: true });
    expect(await store.approvePairing("AAAA-1111", "cli")).toBeNull();
  });

  it("approves a live code once, for every store on the database, and revokes", async () => {
    await store.pairingCodeFor("telegram", "7", "EEEE-5555", 600);
    expect(await store.isPaired("telegram", "7")).toBe(false);
    expect(await store.approvePairing("NOPE-0000", "cli")).toBeNull();
    const approved = await store.approvePairing("EEEE-5555", "api");
    expect(approved).toMatchObject({ code: "EEEE-5555", platform: "telegram", user_id: "7", approved_by: "api", approved_at: clock });
    // Approving again returns the same approval, not a second one.
    expect(await store.approvePairing("EEEE-5555", "cli")).toMatchObject({ approved_by: "api" });
    const other = await db.open({ now: () => clock });
    expect(await other.isPaired("telegram", "7")).toBe(true);
    expect(await other.isPaired("slack", "7")).toBe(false);
    // An approval does not expire with its code; it is listed, newest first, with live codes.
    clock += 10_000;
    await store.pairingCodeFor("telegram", "8", "FFFF-6666", 600);
    expect((await other.listPairings(10)).map((row) => row.code)).toEqual(["FFFF-6666", "EEEE-5555"]);
    expect(await other.revokePairing("telegram", "7")).toBe(true);
    expect(await store.isPaired("telegram", "7")).toBe(false);
    expect(await store.revokePairing("telegram", "7")).toBe(false);
  });
});
