// POST /slack/events and POST /slack/commands: verify the signature over the raw bytes, record
// the message durably through the gateway (a fast write), and only then answer 200. The turn
// never runs inline, so Slack gets its answer well within 3 s.
import { Router, type Request } from "express";
import type { Logger } from "pino";
import type { AcceptResult, GatewayIngress, InboundMessage } from "../../gateway/types.js";
import { postRoute, readRawBody, sendError } from "../shared/http.js";
import type { ThreadMemory } from "../shared/thread-memory.js";
import { normaliseSlackCommand } from "./commands.js";
import { botUserIdFromAuthorizations, classifySlackEvent, SlackEnvelopeSchema } from "./events.js";
import { verifySlackSignature } from "./signature.js";

export interface SlackRouteContext {
  signingSecret: string;
  bodyLimitBytes: number;
  logger: Logger;
  threads: ThreadMemory;
  now: () => number;
  /** The bot's user id from config or auth.test (null when it cannot be found). */
  resolveBotUserId: () => Promise<string | null>;
  configuredBotUserId: string | null;
}

export function slackRoutes(ingress: GatewayIngress, ctx: SlackRouteContext): Router {
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

  const record = async (message: InboundMessage): Promise<AcceptResult> => {
    const result = await ingress.accept(message);
    log.debug(
      { platformMessageId: message.platformMessageId, status: result.status, sessionKey: message.sessionKey },
      "slack message recorded",
    );
    return result;
  };

  postRoute(router, "/slack/events", ctx.bodyLimitBytes, async (req, res) => {
    const check = verified(req);
    if (!check.ok) {
      log.warn({ reason: check.reason }, "slack event refused");
      sendError(res, 401, check.reason);
      return;
    }
    const parsed = SlackEnvelopeSchema.safeParse(parseJson(check.raw));
    if (!parsed.success) {
      sendError(res, 400, "body is not a Slack event payload");
      return;
    }
    const envelope = parsed.data;
    if (envelope.type === "url_verification") {
      if (!envelope.challenge) {
        sendError(res, 400, "url_verification without challenge");
        return;
      }
      res.status(200).json({ challenge: envelope.challenge });
      return;
    }
    if (envelope.type !== "event_callback") {
      res.status(200).end();
      return;
    }
    const botUserId =
      ctx.configuredBotUserId ?? botUserIdFromAuthorizations(envelope) ?? (await ctx.resolveBotUserId());
    const decision = classifySlackEvent(envelope, { botUserId, threads: ctx.threads, now: ctx.now() });
    if (decision.kind === "ignore") {
      log.debug({ eventId: envelope.event_id, reason: decision.reason }, "slack event ignored");
      res.status(200).end();
      return;
    }
    const retryNum = req.get("x-slack-retry-num");
    let result: AcceptResult;
    try {
      result = await record(decision.message);
    } catch (error) {
      // Not recorded: a non-2xx answer makes Slack deliver the event again.
      log.error({ err: error, eventId: envelope.event_id }, "slack event could not be recorded");
      sendError(res, 503, "message could not be recorded; retry later");
      return;
    }
    if (result.status === "rejected") {
      log.warn({ eventId: envelope.event_id, reason: result.reason }, "slack event rejected by the gateway");
    } else if (decision.rememberThread) {
      ctx.threads.remember(decision.rememberThread);
    }
    if (result.status === "duplicate" && retryNum) {
      log.info({ eventId: envelope.event_id, retryNum, reason: req.get("x-slack-retry-reason") }, "slack redelivery");
    }
    res.status(200).end();
  });

  postRoute(router, "/slack/commands", ctx.bodyLimitBytes, async (req, res) => {
    const check = verified(req);
    if (!check.ok) {
      log.warn({ reason: check.reason }, "slack command refused");
      sendError(res, 401, check.reason);
      return;
    }
    const form = new URLSearchParams(check.raw.toString("utf8"));
    if (form.get("ssl_check") === "1") {
      res.status(200).end();
      return;
    }
    const decision = normaliseSlackCommand(form, ctx.now());
    if (decision.kind === "invalid") {
      sendError(res, 400, decision.reason);
      return;
    }
    let result: AcceptResult;
    try {
      result = await record(decision.message);
    } catch (error) {
      log.error({ err: error }, "slack command could not be recorded");
      sendError(res, 503, "command could not be recorded; retry later");
      return;
    }
    const text =
      result.status === "rejected" ? `Not accepted: ${result.reason}` : `Received \`${decision.message.text}\``;
    res.status(200).json({ response_type: "ephemeral", text });
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
