// Lease holder strings: `pid=<pid>:host=<hostname>:turn=<session>:<uuid8>:platform=<platform>`.
// The pid and host let a waiter on the same machine prove a crashed holder is gone.
import { randomUUID } from "node:crypto";
import { hostname as osHostname } from "node:os";

export interface MakeHolderInput {
  sessionId: string;
  platform: string;
  /** Defaults to 8 random hex characters. */
  turnId?: string;
  /** Defaults to this machine's hostname; must match the store's `hostname` option to be reapable. */
  host?: string;
}

export function makeHolder(input: MakeHolderInput): string {
  const turnId = input.turnId ?? randomUUID().replace(/-/g, "").slice(0, 8);
  const host = input.host ?? osHostname();
  return `pid=${process.pid}:host=${host}:turn=${input.sessionId}:${turnId}:platform=${input.platform}`;
}

export interface ParsedHolder {
  pid: number;
  /** Absent when the holder does not name its host: such a holder is never reaped early. */
  host: string | null;
}

/** Reads only the leading `pid=` and `host=` fields, so a session id containing ':' cannot spoof them. */
export function parseHolder(holder: string): ParsedHolder | null {
  const [pidPart, hostPart] = holder.split(":", 2);
  const pidMatch = /^pid=(\d+)$/.exec(pidPart ?? "");
  if (!pidMatch) return null;
  const pid = Number(pidMatch[1]);
  if (!Number.isSafeInteger(pid) || pid <= 0) return null;
  const host = hostPart?.startsWith("host=") && hostPart.length > 5 ? hostPart.slice(5) : null;
  return { pid, host };
}

/** True only when the holder names this host and its process no longer exists (ESRCH). */
export function isHolderProvablyDead(holder: string, thisHost: string): boolean {
  const parsed = parseHolder(holder);
  if (!parsed || parsed.host === null || parsed.host !== thisHost) return false;
  if (parsed.pid === process.pid) return false;
  try {
    process.kill(parsed.pid, 0);
    return false;
  } catch (err) {
    // EPERM: the process exists but belongs to someone else, so it is alive.
    return (err as NodeJS.ErrnoException).code === "ESRCH";
  }
}
