// Slack Events API requests as Slack sends them: fixture payloads with fresh ids, signed with
// the v0 scheme over the exact bytes posted.
import { slackSignature } from "../../../src/adapters/slack/signature.js";
import { fixtureJson, uniqueToken } from "./fixtures.js";

export const SLACK_SECRET = "8f742231b10e8888abcd99yyyzzz85a5";
export const SLACK_TOKEN = "xoxb-17653672481-19874698323-pdFZKVeTuE8sk7oOcBrzbqgy";
export const SLACK_BOT = "U0BOT000001";

interface SlackEnvelope {
  event_id: string;
  event_time: number;
  event: Record<string, unknown>;
  [key: string]: unknown;
}

export interface SlackMention {
  body: string;
  eventId: string;
  channel: string;
  /** The mention's ts: the reply's thread. */
  ts: string;
  question: string;
}

function freshTs(): string {
  const token = uniqueToken();
  const micro = String(parseInt(token.slice(-4), 36) % 1_000_000).padStart(6, "0");
  return `${Math.floor(Date.now() / 1000)}.${micro}`;
}

/** An app_mention of the bot asking `question`, in its own channel unless one is given. */
export function slackMention(question: string, channel = `C0${uniqueToken()}`): SlackMention {
  const envelope = fixtureJson<SlackEnvelope>("slack", "app_mention.json");
  const ts = freshTs();
  const eventId = `Ev0${uniqueToken()}`;
  envelope.event_id = eventId;
  envelope.event_time = Math.floor(Date.now() / 1000);
  envelope.event = { ...envelope.event, ts, event_ts: ts, channel, text: `<@${SLACK_BOT}> ${question}` };
  delete envelope.event.blocks;
  return { body: JSON.stringify(envelope), eventId, channel, ts, question };
}

/** The bot's own message in a thread, as Slack echoes it back to the app after the bot posted it. */
export function slackOwnMessage(channel: string, threadTs: string, posted: { ts: string; text: string }): { body: string; eventId: string } {
  const envelope = fixtureJson<SlackEnvelope>("slack", "own_message.json");
  const eventId = `Ev0${uniqueToken()}`;
  envelope.event_id = eventId;
  envelope.event = { ...envelope.event, ts: posted.ts, event_ts: posted.ts, text: posted.text, channel, thread_ts: threadTs };
  return { body: JSON.stringify(envelope), eventId };
}

/** A person's reply (no mention) in a thread. */
export function slackThreadReply(channel: string, threadTs: string, text: string): { body: string; eventId: string } {
  const envelope = fixtureJson<SlackEnvelope>("slack", "message_thread_reply.json");
  const ts = freshTs();
  const eventId = `Ev0${uniqueToken()}`;
  envelope.event_id = eventId;
  envelope.event = { ...envelope.event, ts, event_ts: ts, text, channel, thread_ts: threadTs };
  return { body: JSON.stringify(envelope), eventId };
}

export interface SlackPostOptions {
  timestamp?: number;
  secret?: string;
  headers?: Record<string, string>;
}

export async function postSlackEvent(baseUrl: string, body: string, options: SlackPostOptions = {}): Promise<Response> {
  const timestamp = String(options.timestamp ?? Math.floor(Date.now() / 1000));
  return fetch(`${baseUrl}/slack/events`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "x-slack-request-timestamp": timestamp,
      "x-slack-signature": slackSignature(options.secret ?? SLACK_SECRET, timestamp, body),
      ...options.headers,
    },
    body,
    signal: AbortSignal.timeout(5_000),
  });
}
