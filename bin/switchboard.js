#!/usr/bin/env node
// Runs the TypeScript sources through tsx, so `npx switchboard` works without a build step.
import { register } from "tsx/esm/api";

register();
await import("../src/main/cli.ts");
