// Lease holder strings: `pid=<pid>:host=<host>:turn=<session>:<uuid8>:platform=<platform>`.
// The pid and host let a waiter on the same machine (and pid namespace) prove a crashed holder is gone.
import { randomUUID } from "node:crypto";
import { readlinkSync } from "node:fs";
import { hostname as osHostname } from "node:os";

let hostOfThisProcess: string | undefined;

/**
 * This process's host as holders name it: the host name, qualified by the pid namespace where
 * Linux shows it (`web-1/pidns-4026531836`). Only a process in the same pid namespace can prove a
 * pid gone: two containers that share a host name (host networking) but not their pids must not
 * take each other's live holders for dead.
 */
export function thisHost(): string {
  hostOfThisProcess ??= qualifiedHost(osHostname(), pidNamespace());
  return hostOfThisProcess;
}

function qualifiedHost(name: string, namespace: string | null): string {
  return namespace === null ? name : `${name}/pidns-${namespace}`;
}

function pidNamespace(): string | null {
  try {
    return /^pid:\[(\d+)\]$/.exec(readlinkSync("/proc/self/ns/pid"))?.[1] ?? null;
  } catch {
    return null; // not Linux, or /proc is not mounted: the host name alone
  }
}

export interface MakeHolderInput {
  sessionId: string;
  platform: string;
  /** Defaults to 8 random hex characters. */
  turnId?: string;
  /** Defaults to thisHost(); must match the store's `hostname` option to be reapable. */
  host?: string;
}

export function makeHolder(input: MakeHolderInput): string {
  const turnId = input.turnId ?? randomUUID().replace(/-/g, "").slice(0, 8);
  const host = input.host ?? thisHost();
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

/** True when the holder names this process: its pid, on this host. */
export function isHeldByThisProcess(holder: string, localHost: string): boolean {
  const parsed = parseHolder(holder);
  return parsed !== null && parsed.pid === process.pid && parsed.host === localHost;
}

/** True only when the holder names this host and its process no longer exists (ESRCH). */
export function isHolderProvablyDead(holder: string, localHost: string): boolean {
  const parsed = parseHolder(holder);
  if (!parsed || parsed.host === null || parsed.host !== localHost) return false;
  if (parsed.pid === process.pid) return false;
  try {
    process.kill(parsed.pid, 0);
    return false;
  } catch (err) {
    // EPERM: the process exists but belongs to someone else, so it is alive.
    return (err as NodeJS.ErrnoException).code === "ESRCH";
  }
}
