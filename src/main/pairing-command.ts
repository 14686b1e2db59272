// `switchboard pairing list | approve <code> | revoke <platform>:<user id>`: the access policy's
// pairings from the command line, on the store the configuration names (the gateway need not run).
import { loadConfig } from "./config.js";
import { openStore } from "../state/open-store.js";
import type { SessionStore } from "../state/types.js";

export const PAIRING_USAGE = `switchboard pairing list                       live pairing codes and approved users
switchboard pairing approve <code>             let the user who was shown <code> talk to the bot
switchboard pairing revoke <platform>:<user>   take a user's approval back (e.g. telegram:12345)`;

/** Runs the command; returns the exit code (2: bad usage, 1: no such code or user). */
export async function runPairing(flags: string[], env: NodeJS.ProcessEnv): Promise<number> {
  const [action, argument] = flags;
  const usable = (action === "list" && flags.length === 1) || ((action === "approve" || action === "revoke") && flags.length === 2);
  if (!usable) {
    console.error(PAIRING_USAGE);
    return 2;
  }
  const store = await openStore(loadConfig(env));
  try {
    return await run(store, action, argument ?? "");
  } finally {
    await store.close();
  }
}

async function run(store: SessionStore, action: string, argument: string): Promise<number> {
  if (action === "list") {
    for (const row of await store.listPairings(500)) {
      const state = row.approved_at !== null ? `approved ${new Date(row.approved_at * 1000).toISOString()} by ${row.approved_by}` : `code ${row.code}, expires ${new Date(row.expires_at * 1000).toISOString()}`;
      console.log(`${row.platform}:${row.user_id}\t${state}`);
    }
    return 0;
  }
  if (action === "approve") {
    const approved = await store.approvePairing(argument.trim().toUpperCase(), "cli");
    if (!approved) {
      console.error(`no live pairing code ${argument}`);
      return 1;
    }
    console.log(`approved ${approved.platform}:${approved.user_id}`);
    return 0;
  }
  const split = argument.indexOf(":");
  if (split <= 0 || split === argument.length - 1) {
    console.error(`revoke takes <platform>:<user id>, e.g. telegram:12345\n\n${PAIRING_USAGE}`);
    return 2;
  }
  if (!(await store.revokePairing(argument.slice(0, split), argument.slice(split + 1)))) {
    console.error(`no approved user ${argument}`);
    return 1;
  }
  console.log(`revoked ${argument}`);
  return 0;
}
