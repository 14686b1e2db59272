// POST /telegram/webhook: the secret Telegram was given in setWebhook comes back in
// X-Telegram-Bot-Api-Secret-Token; compared in constant time before the body is read as JSON.
// The update is recorded before the 200; a non-2xx makes Telegram send it again.
import { Router } from "express";
import type { Logger } from "pino";
import type { IncomingHttpHeaders } from "node:http";
import { safeEqual } from "../shared/crypto.js";
import { headerValue } from "../shared/headers.js";
import { sendError } from "../../gateway/http-errors.js";
import { postRoute, readRawBody } from "../shared/http.js";
import type { TelegramIntake } from "./intake.js";

export const TELEGRAM_WEBHOOK_PATH = "/telegram/webhook";
export const TELEGRAM_SECRET_HEADER = "x-telegram-bot-api-secret-token";

export interface TelegramRouteContext {
  secret: string;
  bodyLimitBytes: number;
  logger: Logger;
  intake: TelegramIntake;
}

/** Why the secret token header refuses a request (missing or wrong), or null. */
export function secretTokenProblem(headers: IncomingHttpHeaders, secret: string): string | null {
  const given = headerValue(headers, TELEGRAM_SECRET_HEADER);
  return given !== undefined && safeEqual(given, secret) ? null : "missing or wrong X-Telegram-Bot-Api-Secret-Token";
}

export function telegramRoutes(ctx: TelegramRouteContext): Router {
  const router = Router();
  postRoute(router, TELEGRAM_WEBHOOK_PATH, ctx, async (req, res) => {
    const given = req.get(TELEGRAM_SECRET_HEADER);
    if (given === undefined || !safeEqual(given, ctx.secret)) {
      ctx.logger.warn({ present: given !== undefined }, "telegram webhook refused: wrong or missing secret token");
      sendError(res, "invalid_secret_token");
      return;
    }
    let body: unknown;
    try {
      body = JSON.parse(readRawBody(req).toString("utf8"));
    } catch {
      sendError(res, "malformed_request", "body is not JSON");
      return;
    }
    try {
      const outcome = await ctx.intake.update(body);
      if (outcome.kind === "malformed") {
        sendError(res, "malformed_request", "body is not a Telegram update");
        return;
      }
      // No `method` field: Telegram would otherwise take the answer for a Bot API call.
      const status = outcome.kind === "ignored" ? "ignored" : outcome.result.status;
      res.status(200).json({ status });
    } catch (error) {
      ctx.logger.error({ err: (error as Error).message }, "telegram update could not be recorded");
      sendError(res, "dependency_unavailable", "update could not be recorded; retry later");
    }
  });
  return router;
}
