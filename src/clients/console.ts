// Serves the browser console at `/`: one HTML page and one script, read once and kept in memory.
// The page itself needs no key; it asks for one when `apiKeyRequired` and sends it to /api and /ws.
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { Router, type Response } from "express";

export interface ConsoleOptions {
  /** Whether the gateway has an API key: the page then asks for it before anything else. */
  apiKeyRequired: boolean;
  /** Folder holding index.html and console.js (default: src/console, or its source beside a build). */
  assetDir?: string;
}

const here = dirname(fileURLToPath(import.meta.url));

/** The console's files sit in ../console; a compiled build looks back in the sources. */
function defaultAssetDir(): string {
  const candidates = [join(here, "..", "console"), join(here, "..", "..", "src", "console")];
  return candidates.find((dir) => existsSync(join(dir, "index.html"))) ?? here;
}

// The page loads only its own script and talks only to its own origin (HTTP and WebSocket).
const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'unsafe-inline'",
  "connect-src 'self'",
  "img-src 'self' data:",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

function securityHeaders(res: Response): void {
  res.setHeader("Content-Security-Policy", CONTENT_SECURITY_POLICY);
  res.setHeader("X-Content-Type-Options", "nosniff");
  res.setHeader("Referrer-Policy", "no-referrer");
  res.setHeader("X-Frame-Options", "DENY");
  // Small files; revalidating (by ETag) keeps an upgraded gateway from serving a stale script.
  res.setHeader("Cache-Control", "no-cache");
}

export function consoleRouter(options: ConsoleOptions): Router {
  const dir = options.assetDir ?? defaultAssetDir();
  const page = readFileSync(join(dir, "index.html"), "utf8").replace("__API_KEY_REQUIRED__", String(options.apiKeyRequired));
  const script = readFileSync(join(dir, "console.js"), "utf8");
  const router = Router();
  router.get(["/", "/index.html"], (_req, res) => {
    securityHeaders(res);
    res.type("html").send(page);
  });
  router.get("/console.js", (_req, res) => {
    securityHeaders(res);
    res.type("application/javascript").send(script);
  });
  return router;
}
