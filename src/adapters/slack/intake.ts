// What happens to a Slack event callback or slash command once its transport (the signed HTTP
// routes or a Socket Mode envelope) has vouched for it: normalise it to an InboundMessage and
// record it through the gateway. Both transports share this, so a redelivery over either is the
// same duplicate.
import type { Logger } from "pino";
import type { AcceptResult, GatewayIngress, InboundMessage } from "../../gateway/types.js";
import type { ThreadMemory } from "../../bus/thread-memory.js";
import { normaliseSlackCommand } from "./commands.js";
import { botUserIdFromAuthorizations, classifySlackEvent, type SlackEnvelope } from "./events.js";

export interface SlackIntakeContext {
  logger: Logger;
  threads: ThreadMemory;
  now: () => number;
  /** The bot's user id from config or auth.test (null when it cannot be found). */
  resolveBotUserId: () => Promise<string | null>;
  configuredBotUserId: string | null;
  /** Other bots whose messages are answered (`slack:<bot id>`). */
  allowedBots: ReadonlySet<string>;
}

/** Slack's note that this is a redelivery: the HTTP retry headers or the envelope's retry fields. */
export interface SlackRedelivery {
  attempt: number;
  reason: string | null;
}

export type SlackEventOutcome = { kind: "ignored"; reason: string } | { kind: "recorded"; result: AcceptResult };

export type SlackCommandOutcome =
  | { kind: "invalid"; reason: string }
  | { kind: "recorded"; result: AcceptResult; message: InboundMessage };

export interface SlackIntake {
  /** Throws when the message could not be recorded: the caller must let Slack deliver it again. */
  eventCallback(envelope: SlackEnvelope, redelivery: SlackRedelivery | null): Promise<SlackEventOutcome>;
  /** Throws when the command could not be recorded. */
  command(fields: URLSearchParams): Promise<SlackCommandOutcome>;
}

export function createSlackIntake(ingress: GatewayIngress, ctx: SlackIntakeContext): SlackIntake {
  const log = ctx.logger;

  const record = async (message: InboundMessage): Promise<AcceptResult> => {
    const result = await ingress.accept(message);
    log.debug(
      { platformMessageId: message.platformMessageId, status: result.status, sessionKey: message.sessionKey },
      "slack message recorded",
    );
    return result;
  };

  return {
    async eventCallback(envelope, redelivery) {
      const botUserId =
        ctx.configuredBotUserId ?? botUserIdFromAuthorizations(envelope) ?? (await ctx.resolveBotUserId());
      const decision = classifySlackEvent(envelope, { botUserId, threads: ctx.threads, now: ctx.now(), allowedBots: ctx.allowedBots });
      if (decision.kind === "ignore") {
        log.debug({ eventId: envelope.event_id, reason: decision.reason }, "slack event ignored");
        return { kind: "ignored", reason: decision.reason };
      }
      const result = await record(decision.message);
      if (result.status === "rejected") {
        log.warn({ eventId: envelope.event_id, reason: result.reason }, "slack event rejected by the gateway");
      } else if (decision.rememberThread) {
        ctx.threads.remember(decision.rememberThread);
      }
      if (result.status === "duplicate" && redelivery) {
        log.info({ eventId: envelope.event_id, retryNum: redelivery.attempt, reason: redelivery.reason }, "slack redelivery");
      }
      return { kind: "recorded", result };
    },

    async command(fields) {
      const decision = normaliseSlackCommand(fields, ctx.now());
      if (decision.kind === "invalid") return decision;
      const result = await record(decision.message);
      return { kind: "recorded", result, message: decision.message };
    },
  };
}

/** The ephemeral answer to a slash command, shown only to the person who typed it. */
export function slackCommandResponse(outcome: Extract<SlackCommandOutcome, { kind: "recorded" }>): {
  response_type: "ephemeral";
  text: string;
} {
  const text =
    outcome.result.status === "rejected"
      ? `Not accepted: ${outcome.result.reason}`
      : `Received \`${outcome.message.text}\``;
  return { response_type: "ephemeral", text };
}
