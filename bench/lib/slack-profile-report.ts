// The markdown of the profiled Slack round: per message, the whole process's SQLite and Redis
// counts and a split by thread, then self time by module and by function for the process (all
// threads together) and for each thread on its own. Every table names its thread.
import type { ProfileSummary, SelfTime } from "./cpu-profile.js";
import type { Counters } from "./process-counters.js";
import { describePerMessage, totalCount, type CommandCounts } from "./redis-commands.js";

export type ThreadRole = "main" | "workers" | "checkpointer" | "loader" | "other";

export interface ProfiledThread {
  threadId: number;
  role: ThreadRole;
  /** Its CPU profile over the window; null when the thread wrote none. */
  profile: ProfileSummary | null;
  /** What the counting preload counted in it over the window; null when it did not answer. */
  counters: Counters | null;
}

export interface ProfileReport {
  conversations: number;
  messagesPerConversation: number;
  msgsPerS: number;
  /** The process's CPU over the window from /proc: every thread, V8's and libuv's helpers included. */
  processCpuMs: number;
  /** False when the profiles could not be cut to the window and cover the whole process lifetime. */
  windowed: boolean;
  threads: ProfiledThread[];
  process: { profile: ProfileSummary | null; counters: Counters };
  /** INFO commandstats over the window. */
  executedRedis: CommandCounts;
  /** Threads that counted before and did not answer after (dead): their counts are missing. */
  unanswered: number[];
  /** The .cpuprofile files kept in bench/results. */
  kept: string[];
}

/**
 * What a thread is, from the scripts its profile saw run and the SQL it ran over its lifetime:
 * serve's workers thread runs src/main/workers-thread.ts; the store's WAL checkpointer only runs
 * checkpoints; node runs the module loader hooks that tsx registers (the benchmark runs the
 * TypeScript sources) in a thread of their own, one per thread that registers them.
 */
export function threadRole(threadId: number, scripts: ReadonlySet<string> | null, lifetimeSql: readonly string[]): ThreadRole {
  if (threadId === 0) return "main";
  const urls = [...(scripts ?? [])];
  // From the sources (tsx) or compiled (dist/), as `npm start` runs it.
  if (urls.some((url) => /\/(src|dist)\/main\/workers-thread\.(ts|js)$/.test(url))) return "workers";
  if (lifetimeSql.some((sql) => /PRAGMA wal_checkpoint/i.test(sql))) return "checkpointer";
  if (urls.includes("node:internal/modules/esm/worker")) return "loader";
  return "other";
}

interface Names {
  /** For table headers: "main thread". */
  short: string;
  /** With what the thread runs. */
  long: string;
}

function namesOf(thread: ProfiledThread, threaded: boolean): Names {
  const id = thread.threadId;
  switch (thread.role) {
    case "main":
      return { short: "main thread", long: threaded ? "main thread (HTTP ingress: Slack events and their acks)" : "main thread (HTTP ingress and the workers, one event loop)" };
    case "workers":
      return { short: "workers thread", long: `workers thread (thread ${id}: turn and delivery workers)` };
    case "checkpointer":
      return { short: "checkpointer thread", long: `WAL checkpointer thread (thread ${id}: the store's SQLite checkpoints)` };
    case "loader":
      return { short: `loader thread ${id}`, long: `module loader thread ${id} (tsx's loader hooks: the benchmark runs the sources)` };
    default:
      return { short: `thread ${id}`, long: `thread ${id}` };
  }
}

/** `"sql" n.nn`, most frequent first (SQL holds commas, so entries are quoted). */
function describeCounts(counts: Record<string, number>, messages: number): string {
  return (
    Object.entries(counts)
      .sort((a, b) => b[1] - a[1])
      .filter(([, n]) => n / messages >= 0.05)
      .map(([sql, n]) => `\`${sql}\` ${(n / messages).toFixed(2)}`)
      .join("; ") || "none"
  );
}

function table(rows: SelfTime[], heading: string, count: number): string[] {
  return [
    `| ${heading} | self time | share |`,
    "|---|---|---|",
    ...rows.slice(0, count).map((r) => `| ${r.name.replace(/\|/g, "\\|")} | ${r.ms.toFixed(0)} ms | ${(r.share * 100).toFixed(1)}% |`),
  ];
}

const seconds = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;

function commits(c: Counters): number {
  return c.sqlite.transactions + c.sqlite.autocommitWrites;
}

/** The SQLite and Redis bullets of the Before section, for the given counts. */
function countBullets(c: Counters, executed: CommandCounts | null, messages: number, sender: string): string[] {
  const perMsg = (n: number): string => (n / messages).toFixed(2);
  const lines = [
    `- SQLite: ${perMsg(commits(c))} commits (${perMsg(c.sqlite.transactions)} BEGIN...COMMIT transactions + ` +
      `${perMsg(c.sqlite.autocommitWrites)} single-statement writes), ${perMsg(c.sqlite.autocommitReads)} single-statement reads, ${perMsg(c.sqlite.statements)} statements in all;`,
    `- single statements outside a transaction, per message: ${describeCounts(c.sqlite.autocommitSql, messages)};`,
    `- every statement, per message: ${describeCounts(c.sqlite.statementSql, messages)};`,
    `- Redis, sent by the ${sender}: ${perMsg(totalCount(c.redis))} commands — ${describePerMessage(c.redis, messages) || "none"}${executed ? ";" : "."}`,
  ];
  if (executed) {
    lines.push(
      `- Redis, executed by the server (INFO commandstats, scripts' own commands included): ${perMsg(totalCount(executed))} — ${describePerMessage(executed, messages)}.`,
    );
  }
  return lines;
}

/** `subject`: "CPU profile of the main thread (...)"; `parts`: how the busy time splits, if it does. */
function profileSection(profile: ProfileSummary, subject: string, short: string, scope: string, messages: number, parts: string): string[] {
  return [
    `${subject} over ${scope}: ${seconds(profile.busyMs)} busy${parts} of ${seconds(profile.windowMs)} ` +
      `(${(profile.busyMs / messages).toFixed(2)} ms per message). Self time by module, ${short}:`,
    "",
    ...table(profile.modules, `module (${short})`, 15),
    "",
    `Self time by function, ${short}:`,
    "",
    ...table(profile.functions, `function (${short})`, 20),
  ];
}

/** A thread with less than this share of the process's busy time gets no tables of its own. */
const MIN_SECTION_SHARE = 0.01;

export function renderProfileReport(report: ProfileReport): string {
  const messages = report.conversations * report.messagesPerConversation;
  const threads = [...report.threads].sort((a, b) => a.threadId - b.threadId);
  const threaded = threads.some((t) => t.role === "workers");
  const names = new Map(threads.map((t) => [t.threadId, namesOf(t, threaded)]));
  const nameOf = (t: ProfiledThread): Names => names.get(t.threadId) as Names;
  const scope = report.windowed ? "the closed-loop window" : "the whole process lifetime (the window could not be located in the profiles)";
  const perMsg = (n: number): string => (n / messages).toFixed(2);
  const msPerMsg = (ms: number): string => `${(ms / messages).toFixed(2)} ms`;
  const lines: string[] = [
    "#### Where Switchboard's time goes (profiled round)",
    "",
    `Closed loop, ${report.conversations} conversations x ${report.messagesPerConversation} messages, \`switchboard serve\` ` +
      `${threaded ? "with its workers in a thread of their own (the default layout)" : "with its workers on the main thread"}, ` +
      `under \`node --cpu-prof\` and the counting preload, both in every thread (${report.msgsPerS.toFixed(0)} msg/s while profiled). ` +
      "Per message, whole process (all its threads):",
    "",
    ...countBullets(report.process.counters, report.executedRedis, messages, "process"),
    "",
  ];
  if (report.unanswered.length > 0) {
    lines.push(`Threads ${report.unanswered.join(", ")} counted before the window and did not answer after it (dead): their counts are missing.`, "");
  }

  // The split by thread: CPU from each thread's profile, counts from each thread's preload.
  lines.push(
    `Per thread, per message (busy: each thread's CPU profile over ${scope}; the process's CPU from /proc, ` +
      `V8's and libuv's helper threads included, was ${msPerMsg(report.processCpuMs)} per message):`,
    "",
    "| thread | busy | busy per message | SQLite commits | SQLite statements | Redis commands sent |",
    "|---|---|---|---|---|---|",
  );
  const counts = (c: Counters | null): string[] => (c ? [perMsg(commits(c)), perMsg(c.sqlite.statements), perMsg(totalCount(c.redis))] : ["-", "-", "-"]);
  for (const t of threads) {
    const busy = t.profile ? `${seconds(t.profile.busyMs)} of ${seconds(t.profile.windowMs)} (${((t.profile.busyMs / t.profile.windowMs) * 100).toFixed(0)}%)` : "no profile";
    lines.push(`| ${[nameOf(t).long, busy, t.profile ? msPerMsg(t.profile.busyMs) : "-", ...counts(t.counters)].join(" | ")} |`);
  }
  const whole = report.process.profile;
  if (threads.length > 1) {
    lines.push(`| ${["whole process", whole ? `${seconds(whole.busyMs)} (the threads' sum)` : "no profile", whole ? msPerMsg(whole.busyMs) : "-", ...counts(report.process.counters)].join(" | ")} |`);
  }
  lines.push("");
  if (threads.length > 1) {
    for (const t of threads) {
      const c = t.counters;
      if (!c || c.sqlite.statements + totalCount(c.redis) === 0) continue;
      lines.push(`Per message, ${nameOf(t).long}:`, "", ...countBullets(c, null, messages, "thread"), "");
    }
  }

  const profiled = threads.filter((t) => t.profile);
  if (profiled.length === 0 || !whole) {
    lines.push("No CPU profile was written (the server did not exit cleanly).");
    return lines.join("\n");
  }
  const shown = profiled.filter((t) => (t.profile as ProfileSummary).busyMs >= MIN_SECTION_SHARE * whole.busyMs);
  const idle = profiled.filter((t) => !shown.includes(t));
  if (profiled.length > 1) {
    const parts = shown.map((t) => `${nameOf(t).short} ${seconds((t.profile as ProfileSummary).busyMs)}`);
    if (idle.length > 0) parts.push(`the others ${seconds(idle.reduce((sum, t) => sum + (t.profile as ProfileSummary).busyMs, 0))}`);
    lines.push(
      "##### Whole process (all threads together)",
      "",
      ...profileSection(whole, `CPU profiles of all ${profiled.length} threads together`, "all threads", scope, messages, ` (${parts.join(" + ")})`),
      "",
    );
  }
  for (const t of shown) {
    const who = nameOf(t);
    lines.push(`##### ${who.long[0].toUpperCase()}${who.long.slice(1)}`, "", ...profileSection(t.profile as ProfileSummary, `CPU profile of the ${who.long}`, who.short, scope, messages, ""), "");
  }
  if (idle.length > 0) {
    lines.push(`No tables for ${idle.map((t) => nameOf(t).long).join(", ")}: under ${MIN_SECTION_SHARE * 100}% of the process's busy time.`, "");
  }
  lines.push(
    "SQLite's native time shows under the counting preload's statement wrapper, which is what V8 charges it to. " +
      `Profiles kept in bench/results: ${report.kept.map((f) => `\`${f}\``).join(", ")}.`,
  );
  return lines.join("\n");
}
