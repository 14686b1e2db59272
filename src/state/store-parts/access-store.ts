// AccessStore: who may talk to the bot when the access policy pairs strangers (gateway/access.ts).
// A stranger gets a one-time code; an operator approves it; the approval is durable and every node
// reads it here.
import type { PairingRow } from "../types.js";

export interface AccessStore {
  /**
   * The user's pairing code: the live one (unexpired, not approved) if there is one, else `code`,
   * recorded now to expire in `ttlSeconds`. `fresh` says the code was recorded by this call (the
   * user has not been shown it yet).
   */
  pairingCodeFor(platform: string, userId: string, code: string, ttlSeconds: number): Promise<{ code: string; fresh: boolean }>;
  /** Approve a live code; the approved pairing, or null when no such live code exists. Approving an approved code returns it again. */
  approvePairing(code: string, approvedBy: string): Promise<PairingRow | null>;
  /** Whether an approved pairing exists for this user. */
  isPaired(platform: string, userId: string): Promise<boolean>;
  /** Pairings, newest first: live codes and approvals (expired codes left out). */
  listPairings(limit: number): Promise<PairingRow[]>;
  /** Remove a user's approval (and any code); true when there was one. */
  revokePairing(platform: string, userId: string): Promise<boolean>;
}
