// Summarises a V8 .cpuprofile (node --cpu-prof) over a time window: self time by function and by
// module (an npm package, a source file of ours, a part of Node), idle time left out. Native
// frames (no script URL: SQLite's C++ side, JSON.parse, socket writes) are named by function and
// by the module that called them. Paths are shown relative to the repository. node --cpu-prof
// writes one profile per thread (worker threads inherit the flag); each is summarised on its own,
// and the process's is their sum.
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

export interface SelfTime {
  name: string;
  /** Share of the busy samples in the window, 0..1. */
  share: number;
  ms: number;
}

export interface ProfileSummary {
  /** Busy (non-idle) time sampled in the window. */
  busyMs: number;
  windowMs: number;
  samples: number;
  functions: SelfTime[];
  modules: SelfTime[];
  /** The URL of every script the profile saw run, in the window or not (what tells a thread's role). */
  scripts: Set<string>;
}

const REPO = join(import.meta.dirname, "..", "..");
/**
 * The counting preload wraps better-sqlite3's statement methods; V8 charges the native statement
 * (SQLite itself) to the JS function that called it, which is then that wrapper.
 */
const SQLITE_WRAPPER = "bench/lib/instrument-preload.ts";
const SQLITE = "SQLite (better-sqlite3 statements, native)";
const SPECIAL = new Set(["(garbage collector)", "(program)", "(idle)", "(root)"]);

/** An npm package, a file of ours, or a part of Node. */
export function moduleOf(url: string): string {
  if (url === "") return "(native)";
  if (url.startsWith("node:")) {
    const path = url.slice("node:".length);
    // node:internal/streams/writable -> node:internal/streams
    return path.startsWith("internal/") ? `node:${path.split("/").slice(0, 2).join("/")}` : url;
  }
  const path = url.startsWith("file://") ? fileURLToPath(url) : url;
  const nm = path.lastIndexOf("/node_modules/");
  if (nm >= 0) {
    const parts = path.slice(nm + "/node_modules/".length).split("/");
    return parts[0].startsWith("@") ? `${parts[0]}/${parts[1]}` : parts[0];
  }
  const rel = relative(REPO, path);
  return rel.startsWith("..") ? (path.split("/").pop() ?? path) : rel;
}

export function summarizeCpuProfile(file: string, window?: { fromUs: number; toUs: number }): ProfileSummary {
  const profile = JSON.parse(readFileSync(file, "utf8")) as CpuProfile;
  const byId = new Map<number, ProfileNode>(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);

  // The nearest caller with a script: where a native frame's time comes from.
  const callerModule = (id: number): string => {
    for (let at = parent.get(id); at !== undefined; at = parent.get(at)) {
      const url = byId.get(at)?.callFrame.url ?? "";
      if (url !== "") return moduleOf(url);
    }
    return "(native)";
  };
  const describe = (node: ProfileNode): { fn: string; module: string } => {
    const { functionName, url, lineNumber } = node.callFrame;
    if (SPECIAL.has(functionName)) return { fn: functionName, module: functionName };
    if (url === "") {
      const caller = callerModule(node.id);
      return { fn: `${functionName || "(anonymous)"} [native, from ${caller}]`, module: `(native) from ${caller}` };
    }
    const module = moduleOf(url);
    if (module === SQLITE_WRAPPER) return { fn: "Statement run/get/all (SQLite, native)", module: SQLITE };
    return { fn: `${functionName || "(anonymous)"} (${module}:${lineNumber + 1})`, module };
  };

  const from = window?.fromUs ?? profile.startTime;
  const to = window?.toUs ?? profile.endTime;
  const hits = new Map<number, number>();
  let t = profile.startTime;
  let samples = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    t += profile.timeDeltas[i];
    if (t < from || t > to) continue;
    samples += 1;
    hits.set(profile.samples[i], (hits.get(profile.samples[i]) ?? 0) + 1);
  }
  const windowMs = (Math.min(to, profile.endTime) - Math.max(from, profile.startTime)) / 1000;
  const msPerSample = samples > 0 ? windowMs / samples : 0;
  const functions = new Map<string, number>();
  const modules = new Map<string, number>();
  let busy = 0;
  for (const [id, count] of hits) {
    const node = byId.get(id);
    if (!node || node.callFrame.functionName === "(idle)") continue;
    busy += count;
    const { fn, module } = describe(node);
    functions.set(fn, (functions.get(fn) ?? 0) + count);
    modules.set(module, (modules.get(module) ?? 0) + count);
  }
  const rank = (m: Map<string, number>): SelfTime[] =>
    [...m.entries()].map(([name, count]) => ({ name, share: busy ? count / busy : 0, ms: count * msPerSample })).sort((a, b) => b.share - a.share);
  const scripts = new Set(profile.nodes.map((n) => n.callFrame.url).filter((url) => url !== ""));
  return { busyMs: busy * msPerSample, windowMs, samples, functions: rank(functions), modules: rank(modules), scripts };
}

export interface ThreadProfile {
  threadId: number;
  file: string;
}

/** The profiles of process `pid`, one per thread: node names them CPU.<date>.<time>.<pid>.<thread>.<seq>.cpuprofile. */
export function threadProfiles(dir: string, pid: number): ThreadProfile[] {
  const byThread = new Map<number, string>();
  const pattern = new RegExp(`^CPU\\.\\d+\\.\\d+\\.${pid}\\.(\\d+)\\.\\d+\\.cpuprofile$`);
  for (const name of existsSync(dir) ? readdirSync(dir) : []) {
    const match = pattern.exec(name);
    if (!match) continue;
    const threadId = Number(match[1]);
    const file = join(dir, name);
    // One per thread is expected; should there be more, the largest is the thread's run.
    const other = byThread.get(threadId);
    if (!other || statSync(file).size > statSync(other).size) byThread.set(threadId, file);
  }
  return [...byThread].map(([threadId, file]) => ({ threadId, file })).sort((a, b) => a.threadId - b.threadId);
}

/** Several threads' summaries over the same window as one: self times add up, shares are of the sum. */
export function combineSummaries(summaries: ProfileSummary[]): ProfileSummary {
  const busyMs = summaries.reduce((sum, s) => sum + s.busyMs, 0);
  const merge = (pick: (s: ProfileSummary) => SelfTime[]): SelfTime[] => {
    const ms = new Map<string, number>();
    for (const s of summaries) for (const row of pick(s)) ms.set(row.name, (ms.get(row.name) ?? 0) + row.ms);
    return [...ms].map(([name, m]) => ({ name, ms: m, share: busyMs ? m / busyMs : 0 })).sort((a, b) => b.ms - a.ms);
  };
  return {
    busyMs,
    windowMs: Math.max(0, ...summaries.map((s) => s.windowMs)),
    samples: summaries.reduce((sum, s) => sum + s.samples, 0),
    functions: merge((s) => s.functions),
    modules: merge((s) => s.modules),
    scripts: new Set(summaries.flatMap((s) => [...s.scripts])),
  };
}
