// Versioned schema. PRAGMA user_version records the last applied step; each step runs in its own
// BEGIN IMMEDIATE transaction, so processes opening the same file at once migrate it exactly once.
// Add a step at the end; never edit a shipped one.
import type { Database } from "better-sqlite3";

interface Migration {
  version: number;
  sql: string;
}

const MIGRATIONS: Migration[] = [
  {
    version: 1,
    sql: `
      CREATE TABLE sessions (
        id TEXT PRIMARY KEY,
        source TEXT NOT NULL,
        session_key TEXT,
        chat_id TEXT,
        thread_id TEXT,
        user_id TEXT,
        parent_session_id TEXT,
        started_at REAL NOT NULL,
        ended_at REAL,
        end_reason TEXT,
        title TEXT,
        model TEXT
      );
      CREATE INDEX sessions_parent ON sessions (parent_session_id);
      CREATE INDEX sessions_started ON sessions (started_at);
      CREATE INDEX sessions_key ON sessions (session_key);

      CREATE TABLE messages (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
        role TEXT NOT NULL CHECK (role IN ('system', 'user', 'assistant', 'tool')),
        content TEXT,
        api_content TEXT,
        tool_calls TEXT,
        tool_call_id TEXT,
        tool_name TEXT,
        timestamp REAL NOT NULL,
        platform_message_id TEXT,
        display_kind TEXT,
        display_metadata TEXT,
        finish_reason TEXT
      );
      CREATE INDEX messages_session_id ON messages (session_id, id);
      CREATE INDEX messages_platform_message_id ON messages (platform_message_id, session_id)
        WHERE platform_message_id IS NOT NULL;

      CREATE TABLE session_turn_leases (
        conversation_id TEXT PRIMARY KEY,
        holder TEXT NOT NULL,
        acquired_at REAL NOT NULL,
        expires_at REAL NOT NULL,
        ttl_seconds REAL NOT NULL
      );

      CREATE TABLE inbox (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        platform TEXT NOT NULL,
        platform_message_id TEXT NOT NULL,
        session_id TEXT NOT NULL,
        payload TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('pending', 'done', 'failed', 'interrupted', 'rejected')),
        received_at REAL NOT NULL,
        enqueued_at REAL,
        completed_at REAL,
        reply TEXT,
        reason TEXT,
        UNIQUE (platform, platform_message_id)
      );
      CREATE INDEX inbox_session_status ON inbox (session_id, status, id);
      CREATE INDEX inbox_pending ON inbox (id) WHERE status = 'pending';

      CREATE TABLE deliveries (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        platform TEXT NOT NULL,
        session_id TEXT NOT NULL,
        inbox_id INTEGER REFERENCES inbox (id) ON DELETE SET NULL,
        target TEXT NOT NULL,
        text TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('pending', 'sending', 'sent', 'failed')),
        attempts INTEGER NOT NULL DEFAULT 0,
        possible_duplicate INTEGER NOT NULL DEFAULT 0,
        platform_message_id TEXT,
        last_error TEXT,
        created_at REAL NOT NULL,
        updated_at REAL NOT NULL
      );
      CREATE INDEX deliveries_session ON deliveries (session_id, id);
      CREATE INDEX deliveries_unsent ON deliveries (id) WHERE status IN ('pending', 'sending');
    `,
  },
  {
    // What the platform later reports about a sent reply (WhatsApp's sent/delivered/read/failed),
    // found by the message id the send returned.
    version: 2,
    sql: `
      ALTER TABLE deliveries ADD COLUMN display_metadata TEXT;
      CREATE INDEX deliveries_platform_message ON deliveries (platform, platform_message_id)
        WHERE platform_message_id IS NOT NULL;
    `,
  },
  {
    // Images kept with their message: recorded with the inbox row at ingress (inbox_id), then
    // linked to the user message the turn stores (message_id, session_id). A compaction copy of a
    // message gets its own rows.
    version: 3,
    sql: `
      CREATE TABLE attachments (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        inbox_id INTEGER REFERENCES inbox (id) ON DELETE SET NULL,
        session_id TEXT,
        message_id INTEGER REFERENCES messages (id) ON DELETE CASCADE,
        content_type TEXT NOT NULL,
        size_bytes INTEGER NOT NULL,
        name TEXT,
        data BLOB NOT NULL,
        created_at REAL NOT NULL
      );
      CREATE INDEX attachments_session ON attachments (session_id, message_id) WHERE session_id IS NOT NULL;
      CREATE INDEX attachments_inbox ON attachments (inbox_id) WHERE inbox_id IS NOT NULL;
      CREATE INDEX attachments_message ON attachments (message_id) WHERE message_id IS NOT NULL;
    `,
  },
  {
    // A conversation's pending rows by an index of pending rows alone. The index over every row's
    // (session, status, id) grew with every message ever received, and each insert and each
    // completion touched a leaf of its own per conversation, a b-tree three levels deep: pages the
    // turns' and the ingress's connections read again after each other's commits. Every query by
    // session asks for pending rows only.
    version: 4,
    sql: `
      DROP INDEX inbox_session_status;
      CREATE INDEX inbox_session_pending ON inbox (session_id, id) WHERE status = 'pending';
    `,
  },
  {
    // The access policy's pairings (a stranger's one-time code, and the operator's approval of it),
    // and each turn's model usage.
    version: 5,
    sql: `
      CREATE TABLE pairings (
        id INTEGER PRIMARY KEY,
        code TEXT NOT NULL UNIQUE,
        platform TEXT NOT NULL,
        user_id TEXT NOT NULL,
        created_at REAL NOT NULL,
        expires_at REAL NOT NULL,
        approved_at REAL,
        approved_by TEXT
      );
      CREATE INDEX pairings_user ON pairings (platform, user_id);

      CREATE TABLE turn_usage (
        id INTEGER PRIMARY KEY,
        platform TEXT NOT NULL,
        session_id TEXT NOT NULL,
        user_id TEXT,
        inbox_id INTEGER,
        model TEXT NOT NULL,
        model_calls INTEGER NOT NULL,
        prompt_tokens INTEGER NOT NULL,
        completion_tokens INTEGER NOT NULL,
        tool_calls INTEGER NOT NULL,
        created_at REAL NOT NULL
      );
      CREATE INDEX turn_usage_user ON turn_usage (platform, user_id, created_at);
      CREATE INDEX turn_usage_created ON turn_usage (created_at);
    `,
  },
];

export const LATEST_SCHEMA_VERSION = MIGRATIONS[MIGRATIONS.length - 1].version;

function userVersion(db: Database): number {
  return db.pragma("user_version", { simple: true }) as number;
}

export function migrate(db: Database): void {
  const current = userVersion(db);
  if (current > LATEST_SCHEMA_VERSION) {
    throw new Error(
      `database schema version ${current} is newer than this build understands (${LATEST_SCHEMA_VERSION}); upgrade Switchboard`,
    );
  }
  for (const migration of MIGRATIONS) {
    // Already applied: skip without taking the write lock (opening must not queue behind writers).
    if (userVersion(db) >= migration.version) continue;
    const apply = db.transaction(() => {
      // Re-read under the write lock: another process may have applied this step meanwhile.
      if (userVersion(db) >= migration.version) return;
      db.exec(migration.sql);
      db.pragma(`user_version = ${migration.version}`);
    });
    apply.immediate();
  }
}
