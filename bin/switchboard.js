#!/usr/bin/env node
// `switchboard` (and `npm start`): runs the gateway from its compiled JavaScript in dist/, brought
// up to date with src/ first (ensure-built.js). Compiled, each V8 isolate of the process (the main
// thread, the workers thread) is spared tsx's loader thread and its in-memory transforms: about
// 100 MB less resident memory under load (bench/README.md, "Memory under the Slack load").
// Without TypeScript installed (`npm install --omit=dev`) the sources run through tsx instead.
import { buildDist, typescriptCompiler } from "./ensure-built.js";

const tsc = typescriptCompiler();
if (tsc) {
  if (!buildDist(tsc)) {
    console.error("switchboard: compiling src/ into dist/ failed (the errors are above)");
    process.exit(1);
  }
  await import("../dist/main/cli.js");
} else {
  const { register } = await import("tsx/esm/api");
  register();
  await import("../src/main/cli.ts");
}
