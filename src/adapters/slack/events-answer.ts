// POST /slack/events as a plain function of the request headers and the raw body bytes: verify
// the signature, record the message durably through the intake, and only then answer 200. No
// framework in it: the Express route hands it what it read.
import type { IncomingHttpHeaders } from "node:http";
import type { Logger } from "pino";
import { plainError as error } from "../../gateway/http-errors.js";
import type { PlainAnswer } from "../../gateway/types.js";
import { headerValue as header } from "../shared/headers.js";
import { SlackEnvelopeSchema } from "./events.js";
import type { SlackIntake } from "./intake.js";
import { verifySlackSignature, type VerifyResult } from "./signature.js";

export interface SlackEventsContext {
  signingSecret: string;
  logger: Logger;
  now: () => number;
  intake: SlackIntake;
}

export type SlackEventsAnswer = (headers: IncomingHttpHeaders, body: Buffer) => Promise<PlainAnswer>;

/** The signature check both Slack routes make over the exact bytes. */
export function verifySlackRequest(signingSecret: string, headers: IncomingHttpHeaders, body: Buffer, nowMs: number): VerifyResult {
  return verifySlackSignature(
    signingSecret,
    { timestamp: header(headers, "x-slack-request-timestamp"), signature: header(headers, "x-slack-signature") },
    body,
    nowMs,
  );
}

const OK: PlainAnswer = { status: 200 };

export function slackEventsAnswer(ctx: SlackEventsContext): SlackEventsAnswer {
  const log = ctx.logger;
  return async (headers, body) => {
    const check = verifySlackRequest(ctx.signingSecret, headers, body, ctx.now());
    if (!check.ok) {
      log.warn({ reason: check.reason }, "slack event refused");
      return error("invalid_signature", check.reason);
    }
    const parsed = SlackEnvelopeSchema.safeParse(parseJson(body));
    if (!parsed.success) return error("malformed_request", "body is not a Slack event payload");
    const envelope = parsed.data;
    if (envelope.type === "url_verification") {
      if (!envelope.challenge) return error("malformed_request", "url_verification without challenge");
      return { status: 200, json: { challenge: envelope.challenge } };
    }
    if (envelope.type !== "event_callback") return OK;
    const retryNum = header(headers, "x-slack-retry-num");
    const redelivery = retryNum ? { attempt: Number(retryNum), reason: header(headers, "x-slack-retry-reason") ?? null } : null;
    try {
      await ctx.intake.eventCallback(envelope, redelivery);
    } catch (err) {
      // Not recorded: a non-2xx answer makes Slack deliver the event again.
      log.error({ err, eventId: envelope.event_id }, "slack event could not be recorded");
      return error("dependency_unavailable");
    }
    return OK;
  };
}

function parseJson(raw: Buffer): unknown {
  try {
    return JSON.parse(raw.toString("utf8"));
  } catch {
    return undefined;
  }
}
