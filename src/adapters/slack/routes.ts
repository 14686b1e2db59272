// POST /slack/events and POST /slack/commands: verify the signature over the raw bytes, record
// the message durably through the gateway (a fast write), and only then answer 200. The turn
// never runs inline, so Slack gets its answer well within 3 s. The events route answers through
// slackEventsAnswer (events-answer.ts).
import { Router } from "express";
import { sendError } from "../../gateway/http-errors.js";
import { postRoute, readRawBody, sendPlainAnswer } from "../shared/http.js";
import { slackEventsAnswer, verifySlackRequest, type SlackEventsContext } from "./events-answer.js";
import { slackCommandResponse, type SlackCommandOutcome } from "./intake.js";

export interface SlackRouteContext extends SlackEventsContext {
  bodyLimitBytes: number;
}

export function slackRoutes(ctx: SlackRouteContext): Router {
  const router = Router();
  const log = ctx.logger;
  const events = slackEventsAnswer(ctx);

  postRoute(router, "/slack/events", ctx, async (req, res) => {
    sendPlainAnswer(res, await events(req.headers, readRawBody(req)));
  });

  postRoute(router, "/slack/commands", ctx, async (req, res) => {
    const raw = readRawBody(req);
    const check = verifySlackRequest(ctx.signingSecret, req.headers, raw, ctx.now());
    if (!check.ok) {
      log.warn({ reason: check.reason }, "slack command refused");
      sendError(res, "invalid_signature", check.reason);
      return;
    }
    const form = new URLSearchParams(raw.toString("utf8"));
    if (form.get("ssl_check") === "1") {
      res.status(200).end();
      return;
    }
    let outcome: SlackCommandOutcome;
    try {
      outcome = await ctx.intake.command(form);
    } catch (error) {
      log.error({ err: error }, "slack command could not be recorded");
      sendError(res, "dependency_unavailable", "command could not be recorded; retry later");
      return;
    }
    if (outcome.kind === "invalid") {
      sendError(res, "malformed_request", outcome.reason);
      return;
    }
    res.status(200).json(slackCommandResponse(outcome));
  });

  return router;
}
