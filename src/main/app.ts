// The express app: platform routes (they verify their own signatures), the authenticated API,
// health and metrics, the console; every error is JSON.
import express, { type Express, type Router } from "express";
import type { Logger } from "pino";
import { requireApiKey } from "../clients/auth.js";
import { HttpError, jsonErrorHandler, sendError } from "../gateway/http-errors.js";

export interface AppParts {
  logger: Logger;
  apiKey: string | null;
  /** Routes that check their own credentials (platform signatures): Slack, Discord, webhooks. */
  publicRoutes: Router[];
  /** Routes behind the API key: /v1, /api, /admin. */
  protectedRoutes: Router[];
  /** /health and /metrics (open, like most health endpoints; they reveal no content). */
  operationalRoutes: Router[];
  /** The console's static page (served without the key; it asks for it). */
  consoleRoutes?: Router[];
}

export function buildApp(parts: AppParts): Express {
  const app = express();
  app.disable("x-powered-by");
  app.set("trust proxy", false);
  for (const router of parts.operationalRoutes) app.use(router);
  for (const router of parts.publicRoutes) app.use(router);
  for (const router of parts.consoleRoutes ?? []) app.use(router);
  const guard = requireApiKey(parts.apiKey);
  app.use(["/v1", "/api", "/admin"], guard);
  for (const router of parts.protectedRoutes) app.use(router);
  app.use((req, res) => {
    sendError(res, 404, "not_found", `no route for ${req.method} ${req.path}`);
  });
  app.use(jsonErrorHandler(parts.logger));
  return app;
}

export { HttpError };
