// The turn_usage table on PostgreSQL (see ../usage.ts): written with a turn's fenced flush (in its
// one statement, lease.ts, or step by step here), summed per model.
import { USAGE_TOTALS_GROUP, USAGE_TOTALS_SELECT } from "../usage.js";
import type { UsageFilter, UsageInsert, UsageTotals } from "../types.js";
import { clockSql, prepared, type Queryable } from "./connection.js";

const INSERT = `
  INSERT INTO turn_usage (platform, session_id, user_id, inbox_id, model, model_calls, prompt_tokens, completion_tokens, tool_calls, created_at)
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, ${clockSql(10)})`;
const TOTALS = `${USAGE_TOTALS_SELECT}
  WHERE ($1::text IS NULL OR platform = $1) AND ($2::text IS NULL OR user_id = $2) AND ($3::float8 IS NULL OR created_at >= $3)
  ${USAGE_TOTALS_GROUP}`;

/** The values of a usage row for a statement's parameters (all null without usage: nothing is inserted). */
export function usageColumns(usage: UsageInsert | undefined): unknown[] {
  if (!usage) return [null, null, null, null, null, null, null, null, null];
  return [usage.platform, usage.sessionId, usage.userId, usage.inboxId, usage.model, usage.modelCalls, usage.promptTokens, usage.completionTokens, usage.toolCalls];
}

/** The insert of usageColumns from parameter `first` on, for a statement's CTE; `when` guards it. */
export function insertUsageSql(first: number, now: string, when: string): string {
  const p = (offset: number, type: string): string => `$${first + offset}::${type}`;
  return `INSERT INTO turn_usage (platform, session_id, user_id, inbox_id, model, model_calls, prompt_tokens, completion_tokens, tool_calls, created_at)
    SELECT ${p(0, "text")}, ${p(1, "text")}, ${p(2, "text")}, ${p(3, "bigint")}, ${p(4, "text")}, ${p(5, "integer")}, ${p(6, "bigint")}, ${p(7, "bigint")}, ${p(8, "integer")}, ${now}
     WHERE ${p(4, "text")} IS NOT NULL AND ${when}`;
}

interface TotalsRow {
  model: string;
  turns: string | number;
  model_calls: string | number;
  prompt_tokens: string | number;
  completion_tokens: string | number;
  tool_calls: string | number;
}

export class PgUsageSql {
  async insert(db: Queryable, usage: UsageInsert, now: number | null): Promise<void> {
    await db.query(prepared(INSERT, [...usageColumns(usage), now]));
  }

  /** Sums come back as bigint text: read as numbers (token counts stay far below 2^53). */
  async sum(db: Queryable, filter: UsageFilter): Promise<UsageTotals[]> {
    const rows = (await db.query<TotalsRow>(prepared(TOTALS, [filter.platform ?? null, filter.userId ?? null, filter.since ?? null]))).rows;
    return rows.map((row) => ({
      model: row.model,
      turns: Number(row.turns),
      model_calls: Number(row.model_calls),
      prompt_tokens: Number(row.prompt_tokens),
      completion_tokens: Number(row.completion_tokens),
      tool_calls: Number(row.tool_calls),
    }));
  }
}
