// What the profiled Slack round passes to `node --import`: the counting preload
// (instrument-preload.ts) in the server's main thread, through tsx, since the server itself runs
// compiled. The workers thread runs this file too (a worker inherits the --import flags) and does
// nothing: a worker cannot load a TypeScript preload, and the counters are the main thread's.
import { isMainThread } from "node:worker_threads";

if (isMainThread) {
  const { register } = await import("tsx/esm/api");
  register();
  await import("./instrument-preload.ts");
}
