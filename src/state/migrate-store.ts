// Moves an SQLite deployment to PostgreSQL: every session, message, inbox row, delivery and pairing is
// copied with its id, in id order, into an empty schema, in one PostgreSQL transaction; then each
// identity sequence is set past the copied ids so new rows get fresh ones. Leases are not copied:
// the copy refuses while any lease is live (a gateway still running on the file would keep
// writing to it after the copy), and a lease that is expired or held by a dead process means
// nothing once no process uses the file.
import { existsSync } from "node:fs";
import type Database from "better-sqlite3";
import type pg from "pg";
import { isHolderProvablyDead, thisHost } from "./holder.js";
import { openDatabase } from "./open-database.js";
import { checkSchemaName, createPool, inTransaction, quoteSchema } from "./postgres/connection.js";
import { migrateSchema } from "./postgres/migrations.js";

export class MigrateStoreError extends Error {
  override readonly name = "MigrateStoreError";
}

export interface MigrateStoreInput {
  /** The SQLite file (must exist). */
  sqlitePath: string;
  /** postgres://… without a `schema` parameter. */
  connectionString: string;
  schema: string;
}

export type CopiedCounts = Record<"sessions" | "messages" | "inbox" | "deliveries" | "pairings", number>;

interface TableCopy {
  table: keyof CopiedCounts;
  /** Columns read from SQLite, in order; the PostgreSQL insert names the same ones. */
  columns: string[];
  /** The SQLite select: id order, which is the order every reader relies on. */
  select: string;
  /** The PostgreSQL insert's column list (sessions adds `seq`, its creation order). */
  insertColumns?: string[];
  convert?: (row: Record<string, unknown>) => Record<string, unknown>;
  /** The identity column whose sequence must move past the copied values. */
  identity: string;
}

const SESSION_COLUMNS = ["id", "source", "session_key", "chat_id", "thread_id", "user_id", "parent_session_id", "started_at", "ended_at", "end_reason", "title", "model"];
const MESSAGE_COLUMNS = ["id", "session_id", "role", "content", "api_content", "tool_calls", "tool_call_id", "tool_name", "timestamp", "platform_message_id", "display_kind", "display_metadata", "finish_reason"];
const INBOX_COLUMNS = ["id", "platform", "platform_message_id", "session_id", "payload", "status", "received_at", "enqueued_at", "completed_at", "reply", "reason"];
const PAIRING_COLUMNS = ["id", "code", "platform", "user_id", "created_at", "expires_at", "approved_at", "approved_by"];
const DELIVERY_COLUMNS = ["id", "platform", "session_id", "inbox_id", "target", "text", "status", "attempts", "possible_duplicate", "platform_message_id", "last_error", "created_at", "updated_at", "display_metadata"];

// Parents before children: messages reference sessions, deliveries reference inbox rows.
const TABLES: TableCopy[] = [
  {
    table: "sessions",
    columns: SESSION_COLUMNS,
    // rowid is SQLite's creation order, the tie-breaker of listings; PostgreSQL keeps it in `seq`.
    select: `SELECT rowid AS seq, ${SESSION_COLUMNS.join(", ")} FROM sessions ORDER BY rowid`,
    insertColumns: ["seq", ...SESSION_COLUMNS],
    identity: "seq",
  },
  { table: "messages", columns: MESSAGE_COLUMNS, select: `SELECT ${MESSAGE_COLUMNS.join(", ")} FROM messages ORDER BY id`, identity: "id" },
  { table: "inbox", columns: INBOX_COLUMNS, select: `SELECT ${INBOX_COLUMNS.join(", ")} FROM inbox ORDER BY id`, identity: "id" },
  {
    table: "deliveries",
    columns: DELIVERY_COLUMNS,
    select: `SELECT ${DELIVERY_COLUMNS.join(", ")} FROM deliveries ORDER BY id`,
    convert: (row) => ({ ...row, possible_duplicate: row.possible_duplicate === 1 }),
    identity: "id",
  },
  { table: "pairings", columns: PAIRING_COLUMNS, select: `SELECT ${PAIRING_COLUMNS.join(", ")} FROM pairings ORDER BY id`, identity: "id" },
];

/** Rows per INSERT: well under PostgreSQL's 65535 parameters for the widest table. */
const BATCH_ROWS = 500;

/** Leases that still guard a turn: not expired and not held by a process known to be gone. */
function liveLeases(db: Database.Database): string[] {
  const now = Date.now() / 1000;
  const rows = db.prepare("SELECT conversation_id, holder, expires_at FROM session_turn_leases").all() as {
    conversation_id: string;
    holder: string;
    expires_at: number;
  }[];
  const host = thisHost();
  return rows.filter((row) => row.expires_at > now && !isHolderProvablyDead(row.holder, host)).map((row) => row.conversation_id);
}

async function insertBatch(client: pg.PoolClient, table: string, columns: string[], rows: Record<string, unknown>[]): Promise<void> {
  const values: unknown[] = [];
  const tuples = rows.map((row) => {
    const placeholders = columns.map((column) => {
      values.push(row[column] ?? null);
      return `$${values.length}`;
    });
    return `(${placeholders.join(", ")})`;
  });
  // OVERRIDING SYSTEM VALUE: the ids are the SQLite ones, not the sequence's.
  await client.query(`INSERT INTO ${table} (${columns.join(", ")}) OVERRIDING SYSTEM VALUE VALUES ${tuples.join(", ")}`, values);
}

async function copyTable(db: Database.Database, client: pg.PoolClient, copy: TableCopy): Promise<number> {
  const columns = copy.insertColumns ?? copy.columns;
  let batch: Record<string, unknown>[] = [];
  let count = 0;
  // Iterating while awaiting is safe: nothing else uses this SQLite connection meanwhile.
  for (const raw of db.prepare(copy.select).iterate() as IterableIterator<Record<string, unknown>>) {
    batch.push(copy.convert ? copy.convert(raw) : raw);
    if (batch.length === BATCH_ROWS) {
      await insertBatch(client, copy.table, columns, batch);
      count += batch.length;
      batch = [];
    }
  }
  if (batch.length) await insertBatch(client, copy.table, columns, batch);
  count += batch.length;
  // Past the copied ids, so the next row gets a fresh one; an empty table starts at 1 as usual.
  await client.query(
    `SELECT setval(pg_get_serial_sequence($1, $2), COALESCE((SELECT max(${copy.identity}) FROM ${copy.table}), 1), (SELECT count(*) > 0 FROM ${copy.table}))`,
    [copy.table, copy.identity],
  );
  return count;
}

/** Copy the SQLite store at `sqlitePath` into the (new or empty) PostgreSQL schema. */
export async function migrateSqliteToPostgres(input: MigrateStoreInput): Promise<CopiedCounts> {
  const schema = checkSchemaName(input.schema);
  // openDatabase would create a missing file: a typo must not copy an empty store.
  if (!existsSync(input.sqlitePath)) throw new MigrateStoreError(`no SQLite store at ${input.sqlitePath}`);
  // Opening brings an older file to this build's schema, so the columns below exist.
  const { db } = openDatabase(input.sqlitePath, 10_000);
  const pool = createPool({ connectionString: input.connectionString, schema, maxConnections: 1, lockTimeoutMs: 10_000 });
  try {
    // A read transaction: one snapshot of the file even if something writes to it meanwhile.
    db.exec("BEGIN");
    try {
      const live = liveLeases(db);
      if (live.length) {
        throw new MigrateStoreError(
          `${live.length} conversation(s) hold a live turn lease (e.g. ${live[0]}): stop every gateway and worker using the SQLite file first`,
        );
      }
      await migrateSchema(pool, schema);
      return await inTransaction(pool, async (client) => {
        // Nodes started on the schema meanwhile cannot write until this commits.
        await client.query(`LOCK TABLE sessions, messages, inbox, deliveries, session_turn_leases IN EXCLUSIVE MODE`);
        const present: string[] = [];
        for (const table of ["sessions", "messages", "inbox", "deliveries", "session_turn_leases"]) {
          const rows = await client.query(`SELECT 1 FROM ${table} LIMIT 1`);
          if (rows.rowCount) present.push(table);
        }
        if (present.length) {
          throw new MigrateStoreError(
            `schema ${quoteSchema(schema)} already holds rows (${present.join(", ")}): migrate into a new or empty schema`,
          );
        }
        const counts: CopiedCounts = { sessions: 0, messages: 0, inbox: 0, deliveries: 0, pairings: 0 };
        for (const copy of TABLES) counts[copy.table] = await copyTable(db, client, copy);
        return counts;
      });
    } finally {
      db.exec("ROLLBACK");
    }
  } finally {
    db.close();
    await pool.end();
  }
}
