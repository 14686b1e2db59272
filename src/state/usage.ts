// The turn_usage table on SQLite: one row per turn, written in its last fenced flush; summed per
// model for GET /api/usage.
import type { Database, Statement } from "better-sqlite3";
import type { UsageFilter, UsageInsert, UsageTotals } from "./types.js";

/** The sums per model, filtered; a null parameter matches every row. Shared with PostgreSQL (placeholders aside). */
export const USAGE_TOTALS_SELECT = `
  SELECT model, count(*) AS turns, sum(model_calls) AS model_calls, sum(prompt_tokens) AS prompt_tokens,
         sum(completion_tokens) AS completion_tokens, sum(tool_calls) AS tool_calls
    FROM turn_usage`;
export const USAGE_TOTALS_GROUP = "GROUP BY model ORDER BY sum(prompt_tokens) + sum(completion_tokens) DESC, model";

export class UsageSql {
  private readonly insertRow: Statement<unknown[]>;
  private readonly totals: Statement<[string | null, string | null, string | null, string | null, number | null, number | null], UsageTotals>;

  constructor(db: Database) {
    this.insertRow = db.prepare(
      `INSERT INTO turn_usage (platform, session_id, user_id, inbox_id, model, model_calls, prompt_tokens, completion_tokens, tool_calls, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    this.totals = db.prepare(
      `${USAGE_TOTALS_SELECT} WHERE (? IS NULL OR platform = ?) AND (? IS NULL OR user_id = ?) AND (? IS NULL OR created_at >= ?) ${USAGE_TOTALS_GROUP}`,
    );
  }

  /** Inside the flush's transaction. */
  insert(usage: UsageInsert, now: number): void {
    this.insertRow.run(usage.platform, usage.sessionId, usage.userId, usage.inboxId, usage.model, usage.modelCalls, usage.promptTokens, usage.completionTokens, usage.toolCalls, now);
  }

  sum(filter: UsageFilter): UsageTotals[] {
    const platform = filter.platform ?? null;
    const user = filter.userId ?? null;
    const since = filter.since ?? null;
    return this.totals.all(platform, platform, user, user, since, since);
  }
}
