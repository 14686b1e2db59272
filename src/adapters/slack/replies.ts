// How a reply goes out on Slack: one message through chat.postMessage and chat.update, and the
// shared reply pipeline configured for Slack (gate per channel, split at SLACK_MAX_TEXT, thread
// remembered). A resend that may repeat an earlier reply carries message metadata
// `{event_type: "switchboard_reply", event_payload: {delivery_id, session_id, possible_duplicate}}`.
import type { WebClient } from "@slack/web-api";
import type { Logger } from "pino";
import type { ThreadMemory } from "../../bus/thread-memory.js";
import { ReplyPipeline } from "../shared/reply-pipeline.js";
import { RetryAfterGate, type RateLimitGates } from "../shared/retry-after-gate.js";
import { optionalString, requiredString } from "../shared/target.js";
import { slackErrorCode, toSendError, UNEDITABLE_ERRORS } from "./client.js";
import { slackThreadKey } from "./events.js";

/** Slack truncates message text beyond 40,000 characters; longer replies go as several messages. */
export const SLACK_MAX_TEXT = 39_000;

export interface PostOptions {
  channel: string;
  threadTs: string | null;
  metadata?: { event_type: string; event_payload: Record<string, string | number | boolean> };
}

/** Posts one message; returns its ts. */
export async function postSlackMessage(client: WebClient, { channel, threadTs, metadata }: PostOptions, text: string): Promise<string> {
  try {
    const result = await client.chat.postMessage({
      channel,
      text,
      ...(threadTs ? { thread_ts: threadTs } : {}),
      ...(metadata ? { metadata } : {}),
    });
    if (!result.ts) throw new Error("Slack chat.postMessage returned no ts");
    return result.ts;
  } catch (error) {
    throw toSendError(error, "chat.postMessage");
  }
}

export async function updateSlackMessage(client: WebClient, channel: string, ts: string, text: string): Promise<void> {
  try {
    await client.chat.update({ channel, ts, text });
  } catch (error) {
    throw toSendError(error, "chat.update");
  }
}

export function slackChannelOf(target: Record<string, unknown>): string {
  return requiredString(target, "channel", "slack");
}

export interface SlackRepliesDeps {
  client: WebClient;
  threads: ThreadMemory;
  rateLimits?: RateLimitGates;
  logger: Logger;
}

export function createSlackReplies({ client, threads, rateLimits, logger }: SlackRepliesDeps): ReplyPipeline {
  const post = (options: PostOptions, text: string): Promise<string> => postSlackMessage(client, options, text);
  const channelOf = slackChannelOf;

  const rememberThread = (target: Record<string, unknown>) => {
    const threadTs = optionalString(target, "thread_ts");
    if (threadTs) threads.remember(slackThreadKey(optionalString(target, "team") ?? "unknown", channelOf(target), threadTs));
  };

  return new ReplyPipeline({
    platform: "Slack",
    splitLimit: SLACK_MAX_TEXT,
    // Per channel: a 429 on a streamed preview also holds back the delivery that follows it.
    gate: new RetryAfterGate(rateLimits?.windows("slack")),
    gateKey: channelOf,
    rememberThread,
    parts: (reply) => {
      const channel = channelOf(reply.target);
      const options: PostOptions = {
        channel,
        threadTs: optionalString(reply.target, "thread_ts"),
        metadata: {
          event_type: "switchboard_reply",
          event_payload: { delivery_id: reply.deliveryId, session_id: reply.sessionId, possible_duplicate: reply.possibleDuplicate },
        },
      };
      return {
        post: (part) => post(options, part),
        edit: async (ts, part) => {
          try {
            await client.chat.update({ channel, ts, text: part });
          } catch (error) {
            const code = slackErrorCode(error);
            if (code === null || !UNEDITABLE_ERRORS.has(code)) throw toSendError(error, "chat.update");
            // The streamed message is gone or frozen: post the final text instead of losing it.
            logger.warn({ deliveryId: reply.deliveryId, code }, "slack message not editable; posting the reply anew");
            return post(options, part);
          }
        },
      };
    },
  });
}
