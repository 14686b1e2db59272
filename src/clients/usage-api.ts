// GET /api/usage?platform=&user=&since= (behind the key): the turns' model usage summed per model.
// `user` is the platform's user id (with `platform`); `since` is epoch seconds or an ISO 8601 time.
import { Router } from "express";
import type { SessionStore, UsageFilter } from "../state/types.js";
import { HttpError } from "../gateway/http-errors.js";

function sinceOf(value: unknown): number | undefined {
  if (value === undefined) return undefined;
  const text = typeof value === "string" ? value.trim() : "";
  const seconds = /^\d{1,12}(\.\d+)?$/.test(text) ? Number(text) : Date.parse(text) / 1000;
  if (!Number.isFinite(seconds)) throw new HttpError("invalid_query", "since must be epoch seconds or an ISO 8601 time");
  return seconds;
}

function textOf(value: unknown, name: string): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "string" || value.length === 0 || value.length > 256) throw new HttpError("invalid_query", `${name} must be 1-256 characters`);
  return value;
}

export function usageRouter(store: SessionStore): Router {
  const router = Router();
  router.get("/api/usage", async (req, res) => {
    const platform = textOf(req.query.platform, "platform");
    const userId = textOf(req.query.user, "user");
    const since = sinceOf(req.query.since);
    const filter: UsageFilter = { ...(platform ? { platform } : {}), ...(userId ? { userId } : {}), ...(since !== undefined ? { since } : {}) };
    const totals = await store.usageTotals(filter);
    res.json({ filter: { platform: platform ?? null, user: userId ?? null, since: since ?? null }, totals });
  });
  return router;
}
