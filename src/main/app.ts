// The express app: platform routes (they verify their own signatures), the authenticated API,
// health and metrics, the console; every error is JSON. The browser rules come first: a no-key
// gateway answers only its loopback host names (or ALLOWED_HOSTS), and state-changing requests
// to the API from a foreign origin are refused.
import express, { type Express, type Router } from "express";
import type { Logger } from "pino";
import { acceptsQueryToken } from "../clients/admin.js";
import { ApiKeyCheck, requireApiKey } from "../clients/auth.js";
import { hostGuard, NO_EXTRA_BROWSER_RULES, originGuard, type BrowserRules } from "../clients/browser-rules.js";
import { clientAddress } from "../clients/forwarded.js";
import { HttpError, jsonErrorHandler, sendError } from "../gateway/http-errors.js";

export interface AppParts {
  logger: Logger;
  apiKey: string | null;
  /** The key check shared with /ws (one count of wrong keys); default: a new one for `apiKey`. */
  keyCheck?: ApiKeyCheck;
  /** Allowed hosts and origins, TRUST_PROXY. Default: loopback hosts, own origin, no proxy. */
  browser?: BrowserRules;
  /** Routes that check their own credentials (platform signatures): Slack, Discord, webhooks. */
  publicRoutes: Router[];
  /** Routes behind the API key: /v1, /api, /admin. */
  protectedRoutes: Router[];
  /** /health and /metrics (open, like most health endpoints; they reveal no content). */
  operationalRoutes: Router[];
  /** The console's static page (served without the key; it asks for it). */
  consoleRoutes?: Router[];
}

const PROTECTED_PREFIXES = ["/v1", "/api", "/admin"];

export function buildApp(parts: AppParts): Express {
  const browser = parts.browser ?? NO_EXTRA_BROWSER_RULES;
  const keys = parts.keyCheck ?? new ApiKeyCheck(parts.apiKey);
  const app = express();
  app.disable("x-powered-by");
  // X-Forwarded-Proto/-For/-Host count only from the proxies TRUST_PROXY says are there.
  app.set("trust proxy", browser.trustProxyHops > 0 ? browser.trustProxyHops : false);
  if (!keys.required) app.use(hostGuard(browser));
  for (const router of parts.operationalRoutes) app.use(router);
  for (const router of parts.publicRoutes) app.use(router);
  for (const router of parts.consoleRoutes ?? []) app.use(router);
  app.use(PROTECTED_PREFIXES, originGuard(browser));
  const guard = requireApiKey(keys, { clientAddress: (req) => clientAddress(req, browser.trustProxyHops), acceptsQueryToken });
  app.use(PROTECTED_PREFIXES, guard);
  for (const router of parts.protectedRoutes) app.use(router);
  app.use((req, res) => {
    sendError(res, "not_found", `no route for ${req.method} ${req.path}`);
  });
  app.use(jsonErrorHandler(parts.logger));
  return app;
}

export { HttpError };
