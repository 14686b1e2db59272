// The `message.queued` event of a newly recorded inbox row. The thread that runs turns publishes
// it, on the event bus its turns publish `turn.started` on, so a session's stream says a message
// was queued before the turn that answers it started. (Published by the ingress thread after its
// ack, it could reach the stream after `turn.started`: the turn starts the moment its wake-up arrives.)
//
// A row the ingress hands to this process's own workers names their announcer in its payload.
// The notice normally travels with the row's wake-up; a turn can take the row before that arrives
// (a turn's release reads the conversation's next row at once), so taking a row of its own
// announcer that is not announced yet announces it first. Rows recorded elsewhere are announced
// by their own ingress, before their wake-up job is added.
import { randomUUID } from "node:crypto";
import type { EventPublisher } from "../bus/types.js";
import type { InboxRow } from "../state/types.js";
import { inboundOf } from "./inbox-payload.js";

/** The payload field naming the announcer of a row recorded for this process's own workers. */
export const ANNOUNCER_FIELD = "queued_announcer";

/** Inbox ids an announcer remembers having announced (the oldest are forgotten first). */
const REMEMBERED = 10_000;

export interface QueuedNotice {
  sessionId: string;
  data: { inbox_id: number; platform: string; platform_message_id: string; text: string; user_id: string | null };
}

export function queuedNoticeOf(row: InboxRow): QueuedNotice {
  const message = inboundOf(row);
  return {
    sessionId: row.session_id,
    data: { inbox_id: row.id, platform: row.platform, platform_message_id: row.platform_message_id, text: message.text, user_id: message.userId },
  };
}

/** Publish the notices, in order; resolves once each is published or failed (a lost notice only leaves a status event out). */
export async function announceQueued(events: EventPublisher, notices: readonly QueuedNotice[]): Promise<void> {
  await Promise.allSettled(notices.map((notice) => events.publish(notice.sessionId, "message.queued", notice.data)));
}

/** The announcer of the rows handed to one thread's workers: each notice once, before the row's turn. */
export class QueuedAnnouncer {
  readonly id = randomUUID();
  private readonly announced = new Set<number>();

  constructor(private readonly events: EventPublisher) {}

  /** Publish the notices this announcer has not published yet, in order; settles once they are out (or failed). */
  announce(notices: readonly QueuedNotice[]): Promise<void> {
    const fresh = notices.filter((notice) => this.remember(notice.data.inbox_id));
    return fresh.length > 0 ? announceQueued(this.events, fresh) : Promise.resolve();
  }

  /** Rows a turn takes as its input: its own rows not announced yet are announced now, before the turn's events. */
  taking(rows: readonly InboxRow[]): void {
    void this.announce(rows.filter((row) => row.payload[ANNOUNCER_FIELD] === this.id).map(queuedNoticeOf));
  }

  private remember(inboxId: number): boolean {
    if (this.announced.has(inboxId)) return false;
    this.announced.add(inboxId);
    if (this.announced.size > REMEMBERED) this.announced.delete(this.announced.values().next().value as number);
    return true;
  }
}
