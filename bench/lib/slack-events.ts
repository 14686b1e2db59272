// Signed Slack Events API deliveries of `app_mention`s, the way Slack sends them: one conversation
// is one channel with one person in it; its first mention is top level and starts the thread,
// the later ones are mentions inside that thread. Message timestamps are unique across the run
// (the Chat SDK deduplicates on the message ts alone).
import { slackSignature } from "../../src/adapters/slack/signature.js";
import { FAKE_BOT_USER_ID, FAKE_TEAM_ID } from "./fake-slack-api.js";

export interface SignedDelivery {
  eventId: string;
  channel: string;
  /** The thread the reply belongs in. */
  threadTs: string;
  /** The mention's text without the mention itself. */
  text: string;
  body: string;
  headers: Record<string, string>;
}

let tsCounter = 0;
let conversationCounter = 0;

function nextTs(): string {
  tsCounter += 1;
  return `${Math.floor(Date.now() / 1000)}.${String(tsCounter % 1_000_000).padStart(6, "0")}`;
}

export class SlackConversation {
  readonly channel: string;
  private readonly user: string;
  private threadTs: string | null = null;
  private sent = 0;

  constructor(
    private readonly signingSecret: string,
    /** Distinguishes this run's conversations (and their texts) from every other run's. */
    private readonly tag: string,
  ) {
    conversationCounter += 1;
    const id = `${tag}${conversationCounter}`.toUpperCase().replace(/[^A-Z0-9]/g, "");
    this.channel = `C${id}`;
    this.user = `U${id}`;
  }

  next(): SignedDelivery {
    const ts = nextTs();
    this.threadTs ??= ts;
    const index = this.sent++;
    const text = `${this.channel.toLowerCase()} message ${index}`;
    const eventId = `Ev${this.tag}${this.channel}x${index}`;
    const event: Record<string, unknown> = {
      type: "app_mention",
      user: this.user,
      text: `<@${FAKE_BOT_USER_ID}> ${text}`,
      ts,
      channel: this.channel,
      event_ts: ts,
      team: FAKE_TEAM_ID,
    };
    if (this.threadTs !== ts) event.thread_ts = this.threadTs;
    const body = JSON.stringify({
      token: "bench-verification-token",
      team_id: FAKE_TEAM_ID,
      api_app_id: "A0APP000001",
      event,
      type: "event_callback",
      event_id: eventId,
      event_time: Math.floor(Date.now() / 1000),
      authorizations: [{ enterprise_id: null, team_id: FAKE_TEAM_ID, user_id: FAKE_BOT_USER_ID, is_bot: true, is_enterprise_install: false }],
      is_ext_shared_channel: false,
    });
    const timestamp = String(Math.floor(Date.now() / 1000));
    return {
      eventId,
      channel: this.channel,
      threadTs: this.threadTs,
      text,
      body,
      headers: {
        "content-type": "application/json",
        "x-slack-request-timestamp": timestamp,
        "x-slack-signature": slackSignature(this.signingSecret, timestamp, body),
      },
    };
  }
}
