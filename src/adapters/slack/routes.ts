// POST /slack/events and POST /slack/commands: verify the signature over the raw bytes, record
// the message durably through the gateway (a fast write), and only then answer 200. The turn
// never runs inline, so Slack gets its answer well within 3 s.
import { Router, type Request } from "express";
import type { Logger } from "pino";
import { sendError } from "../../gateway/http-errors.js";
import { postRoute, readRawBody } from "../shared/http.js";
import { SlackEnvelopeSchema } from "./events.js";
import { slackCommandResponse, type SlackCommandOutcome, type SlackIntake } from "./intake.js";
import { verifySlackSignature } from "./signature.js";

export interface SlackRouteContext {
  signingSecret: string;
  bodyLimitBytes: number;
  logger: Logger;
  now: () => number;
  intake: SlackIntake;
}

export function slackRoutes(ctx: SlackRouteContext): Router {
  const router = Router();
  const log = ctx.logger;

  const verified = (req: Request): { ok: true; raw: Buffer } | { ok: false; reason: string } => {
    const raw = readRawBody(req);
    const result = verifySlackSignature(
      ctx.signingSecret,
      { timestamp: req.get("x-slack-request-timestamp"), signature: req.get("x-slack-signature") },
      raw,
      ctx.now(),
    );
    return result.ok ? { ok: true, raw } : result;
  };

  postRoute(router, "/slack/events", ctx, async (req, res) => {
    const check = verified(req);
    if (!check.ok) {
      log.warn({ reason: check.reason }, "slack event refused");
      sendError(res, 401, "invalid_signature", check.reason);
      return;
    }
    const parsed = SlackEnvelopeSchema.safeParse(parseJson(check.raw));
    if (!parsed.success) {
      sendError(res, 400, "malformed_request", "body is not a Slack event payload");
      return;
    }
    const envelope = parsed.data;
    if (envelope.type === "url_verification") {
      if (!envelope.challenge) {
        sendError(res, 400, "malformed_request", "url_verification without challenge");
        return;
      }
      res.status(200).json({ challenge: envelope.challenge });
      return;
    }
    if (envelope.type !== "event_callback") {
      res.status(200).end();
      return;
    }
    const retryNum = req.get("x-slack-retry-num");
    const redelivery = retryNum ? { attempt: Number(retryNum), reason: req.get("x-slack-retry-reason") ?? null } : null;
    try {
      await ctx.intake.eventCallback(envelope, redelivery);
    } catch (error) {
      // Not recorded: a non-2xx answer makes Slack deliver the event again.
      log.error({ err: error, eventId: envelope.event_id }, "slack event could not be recorded");
      sendError(res, 503, "dependency_unavailable", "message could not be recorded; retry later");
      return;
    }
    res.status(200).end();
  });

  postRoute(router, "/slack/commands", ctx, async (req, res) => {
    const check = verified(req);
    if (!check.ok) {
      log.warn({ reason: check.reason }, "slack command refused");
      sendError(res, 401, "invalid_signature", check.reason);
      return;
    }
    const form = new URLSearchParams(check.raw.toString("utf8"));
    if (form.get("ssl_check") === "1") {
      res.status(200).end();
      return;
    }
    let outcome: SlackCommandOutcome;
    try {
      outcome = await ctx.intake.command(form);
    } catch (error) {
      log.error({ err: error }, "slack command could not be recorded");
      sendError(res, 503, "dependency_unavailable", "command could not be recorded; retry later");
      return;
    }
    if (outcome.kind === "invalid") {
      sendError(res, 400, "malformed_request", outcome.reason);
      return;
    }
    res.status(200).json(slackCommandResponse(outcome));
  });

  return router;
}

function parseJson(raw: Buffer): unknown {
  try {
    return JSON.parse(raw.toString("utf8"));
  } catch {
    return undefined;
  }
}
