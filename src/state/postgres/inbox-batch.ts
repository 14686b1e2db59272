// The ingress's group commit on PostgreSQL: a batch of inbound rows in as few round trips as it
// allows. Row by row, each would cost up to three statements awaited one after another (its key's
// live session, that session's conversation, the insert) inside one transaction, and an ack would
// wait for 2 + 3 x the batch's rows round trips. Instead:
// - a batch with keyed rows and no images is first tried as one statement that places each keyed
//   row under its key's live session's conversation, and inserts nothing when a key has no live
//   session: one round trip unless a key is new;
// - otherwise the live sessions of the batch's keys, and their conversations, are read together
//   ahead of the transaction (committed rows: READ COMMITTED reads nothing else inside one either);
// - when every row then has its conversation and no images, every row goes in one INSERT statement,
//   atomic by itself (no BEGIN or COMMIT sent): the batch is one round trip, or two with keys;
// - otherwise (a key with no live session yet, which is created under the key's lock so that a
//   failed batch creates none, or images, which need their row's id) one transaction awaited
//   step by step, each step's statements still sent together;
// - a duplicate's existing row is read after the commit, in statements of their own (inbox.ts).
import type pg from "pg";
import type { InboxInsert, InboxRow, KeyedInboxInsert } from "../types.js";
import type { PgAttachmentSql } from "./attachments.js";
import { allInOrder, inTransaction, sendTogether } from "./connection.js";
import type { PgInboxSql, PlacedInsert } from "./inbox.js";
import type { PgSessionSql } from "./sessions.js";

export interface InboxBatchSql {
  inbox: PgInboxSql;
  sessions: PgSessionSql;
  attachments: PgAttachmentSql;
}

type AnyInsert = InboxInsert | KeyedInboxInsert;

export interface Recorded {
  inserted: boolean;
  row: InboxRow;
}

const isKeyed = (insert: AnyInsert): insert is KeyedInboxInsert => "sessionForKey" in insert;

/** Every row in one transaction, in the given order; a duplicate (in the batch or before it) answers with the existing row. */
export async function recordInboundBatch(pool: pg.Pool, sql: InboxBatchSql, inserts: readonly AnyInsert[], now: number | null): Promise<Recorded[]> {
  const recorded = await keyedInOneStatement(pool, sql.inbox, inserts, now);
  if (recorded) return answered(pool, sql.inbox, inserts, recorded);
  const placed = await placeOnLiveSessions(pool, sql.sessions, inserts);
  const plain = placed.filter((insert): insert is InboxInsert => !isKeyed(insert) && !insert.attachments?.length);
  const { rows, created } =
    plain.length === placed.length
      ? { rows: plain, created: await sql.inbox.insertMany(pool, plain, now) }
      : await inTransaction(pool, (client) => recordStepByStep(client, sql, placed, now));
  return answered(pool, sql.inbox, rows, created);
}

/**
 * A batch with keyed rows and no images in one statement, each keyed row placed under its key's
 * live session's conversation; null when a key has no live session (nothing was written: the batch
 * goes step by step, and the key's session is created under its lock).
 */
async function keyedInOneStatement(pool: pg.Pool, inbox: PgInboxSql, inserts: readonly AnyInsert[], now: number | null): Promise<Array<InboxRow | null> | null> {
  if (!inserts.some(isKeyed) || inserts.some((insert) => insert.attachments?.length)) return null;
  const rows = inserts.map((insert): PlacedInsert => {
    if (!isKeyed(insert)) return { ...insert, sessionKey: null };
    const { sessionForKey, ...row } = insert;
    return { ...row, sessionId: null, sessionKey: sessionForKey.key };
  });
  return inbox.insertPlaced(pool, rows, now);
}

/** Each insert's new row, or for a duplicate the existing one (read after the commit). */
function answered(pool: pg.Pool, inbox: PgInboxSql, rows: ReadonlyArray<Pick<InboxInsert, "platform" | "platformMessageId">>, created: Array<InboxRow | null>): Promise<Recorded[]> {
  return Promise.all(
    rows.map(async (insert, i) => {
      const row = created[i];
      return row ? { inserted: true, row } : { inserted: false, row: await inbox.existing(pool, insert) };
    }),
  );
}

/**
 * The keyed rows whose key has a live session, placed under that session's conversation (one
 * round trip for the sessions, one for the conversations that are not known roots); the others
 * stay keyed.
 */
async function placeOnLiveSessions(pool: pg.Pool, sessions: PgSessionSql, inserts: readonly AnyInsert[]): Promise<AnyInsert[]> {
  const keys = [...new Set(inserts.filter(isKeyed).map((insert) => insert.sessionForKey.key))];
  if (keys.length === 0) return [...inserts];
  const client = await pool.connect();
  const conversationOfKey = new Map<string, string>();
  try {
    const live = await allInOrder(sendTogether(client, () => keys.map((key) => sessions.liveForKey(client, key))));
    const found = keys.flatMap((key, i) => (live[i] ? [{ key, sessionId: live[i].id }] : []));
    const conversations = await allInOrder(sendTogether(client, () => found.map(({ sessionId }) => sessions.conversationIdOf(client, sessionId))));
    found.forEach(({ key }, i) => conversationOfKey.set(key, conversations[i]));
  } catch (err) {
    client.release(err as Error);
    throw err;
  }
  client.release();
  return inserts.map((insert) => {
    if (!isKeyed(insert)) return insert;
    const conversationId = conversationOfKey.get(insert.sessionForKey.key);
    if (conversationId === undefined) return insert;
    const { sessionForKey: _placed, ...row } = insert;
    return { ...row, sessionId: conversationId };
  });
}

/**
 * Inside the batch's transaction: each key still without a session gets one (found or created
 * under the key's lock, once per key), then the inserts go out together, then the new rows' images.
 */
async function recordStepByStep(client: pg.PoolClient, sql: InboxBatchSql, placed: readonly AnyInsert[], now: number | null): Promise<{ rows: InboxInsert[]; created: Array<InboxRow | null> }> {
  const conversationOfKey = new Map<string, string>();
  const rows: InboxInsert[] = [];
  for (const insert of placed) {
    if (!isKeyed(insert)) {
      rows.push(insert);
      continue;
    }
    const { sessionForKey, ...row } = insert;
    let conversationId = conversationOfKey.get(sessionForKey.key);
    if (conversationId === undefined) {
      const session = await sql.sessions.ensureForKey(client, sessionForKey.key, sessionForKey.newId, sessionForKey.input, now);
      // Not remembered as a root: the session may be this transaction's, and roll back with it.
      conversationId = await sql.sessions.conversationIdOf(client, session.id, false);
      conversationOfKey.set(sessionForKey.key, conversationId);
    }
    rows.push({ ...row, sessionId: conversationId });
  }
  const created = await sql.inbox.insertMany(client, rows, now);
  await allInOrder(
    sendTogether(client, () =>
      rows.flatMap((row, i) => {
        const id = created[i]?.id;
        return id !== undefined && row.attachments?.length ? [sql.attachments.insertForInbox(client, id, row.attachments, now)] : [];
      }),
    ),
  );
  return { rows, created };
}
