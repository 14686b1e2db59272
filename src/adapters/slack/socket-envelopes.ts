// One Socket Mode envelope: its event callback or slash command goes through the same intake as
// the HTTP routes, and the envelope is acknowledged only once that returned (the message is
// durably recorded, or needs nothing). An envelope left unacknowledged is delivered again by
// Slack, as a non-2xx answer is over HTTP.
import type { Logger } from "pino";
import { z } from "zod";
import { SlackEnvelopeSchema } from "./events.js";
import { slackCommandResponse, type SlackCommandOutcome, type SlackIntake } from "./intake.js";

export interface SocketModeEnvelope {
  /** `events_api`, `slash_commands`, `interactive`, ... */
  type: string;
  envelopeId: string;
  payload: unknown;
  /** 0 on the first delivery; Slack counts up on each redelivery of an unacknowledged event. */
  retryAttempt: number;
  retryReason: string | null;
  /** Sends `{envelope_id, payload}` back over the socket; rejects when the socket is gone. */
  ack(payload?: Record<string, unknown>): Promise<void>;
}

/** A slash command's payload: the same fields the HTTP route receives form-encoded. */
const CommandPayloadSchema = z.record(z.string(), z.unknown());

export function createSocketEnvelopeHandler(
  intake: SlackIntake,
  logger: Logger,
): (envelope: SocketModeEnvelope) => Promise<void> {
  const acknowledge = async (envelope: SocketModeEnvelope, payload?: Record<string, unknown>): Promise<void> => {
    try {
      await envelope.ack(payload);
    } catch (error) {
      // The connection closed first: Slack delivers the envelope again, and the intake knows it.
      const reason = error instanceof Error ? error.message : String(error);
      logger.warn({ envelopeId: envelope.envelopeId, err: reason }, "slack envelope could not be acknowledged");
    }
  };

  const eventsApi = async (envelope: SocketModeEnvelope): Promise<void> => {
    const parsed = SlackEnvelopeSchema.safeParse(envelope.payload);
    if (!parsed.success || parsed.data.type !== "event_callback") {
      // A redelivery would carry the same payload: acknowledge rather than have it sent again.
      logger.warn({ envelopeId: envelope.envelopeId }, "slack events_api envelope without an event callback; acknowledged");
      await acknowledge(envelope);
      return;
    }
    const redelivery = envelope.retryAttempt > 0 ? { attempt: envelope.retryAttempt, reason: envelope.retryReason } : null;
    try {
      await intake.eventCallback(parsed.data, redelivery);
    } catch (error) {
      logger.error(
        { err: error, eventId: parsed.data.event_id, envelopeId: envelope.envelopeId },
        "slack event could not be recorded; left unacknowledged so that Slack delivers it again",
      );
      return;
    }
    await acknowledge(envelope);
  };

  const slashCommand = async (envelope: SocketModeEnvelope): Promise<void> => {
    const parsed = CommandPayloadSchema.safeParse(envelope.payload);
    const fields = new URLSearchParams();
    for (const [key, value] of Object.entries(parsed.success ? parsed.data : {})) {
      if (typeof value === "string") fields.set(key, value);
    }
    let outcome: SlackCommandOutcome;
    try {
      outcome = await intake.command(fields);
    } catch (error) {
      // Slack does not redeliver commands; without an acknowledgement the person sees it failed.
      logger.error({ err: error, envelopeId: envelope.envelopeId }, "slack command could not be recorded");
      return;
    }
    if (outcome.kind === "invalid") {
      logger.warn({ envelopeId: envelope.envelopeId, reason: outcome.reason }, "slack command refused");
      await acknowledge(envelope, { response_type: "ephemeral", text: `Not accepted: ${outcome.reason}` });
      return;
    }
    await acknowledge(envelope, slackCommandResponse(outcome));
  };

  return async (envelope: SocketModeEnvelope): Promise<void> => {
    switch (envelope.type) {
      case "events_api":
        return eventsApi(envelope);
      case "slash_commands":
        return slashCommand(envelope);
      default:
        // Interactivity and the like: nothing here answers them, and Slack needs no redelivery.
        logger.info({ type: envelope.type, envelopeId: envelope.envelopeId }, "slack envelope type not handled; acknowledged");
        return acknowledge(envelope);
    }
  };
}
