// GET /api/sessions, GET /api/sessions/:id/messages, POST /api/sessions/:id/interrupt.
import type { IncomingMessage, ServerResponse } from "node:http";
import express, { Router } from "express";
import { z } from "zod";
import type { SessionStore } from "../state/types.js";
import { HttpError } from "../gateway/http-errors.js";
import type { GatewayIngress } from "../gateway/types.js";

const interruptBody = z.object({ text: z.string().max(10_000).optional(), hard: z.boolean().optional() }).strict();

export const DEFAULT_SESSION_LIST_LIMIT = 200;
export const MAX_SESSION_LIST_LIMIT = 1000;

/** `?limit=`: an integer 1..1000 written in digits; absent means the default. */
function listLimit(value: unknown): number {
  if (value === undefined) return DEFAULT_SESSION_LIST_LIMIT;
  const limit = typeof value === "string" && /^\d{1,7}$/.test(value) ? Number(value) : NaN;
  if (!(limit >= 1 && limit <= MAX_SESSION_LIST_LIMIT)) {
    throw new HttpError("invalid_limit", `limit must be an integer from 1 to ${MAX_SESSION_LIST_LIMIT}`);
  }
  return limit;
}

/**
 * A state-changing route takes `application/json` only: a page on another site can send a
 * "simple" cross-site request (text/plain, a form, or no body) without asking first, but not JSON.
 */
export function requireJsonContent(req: IncomingMessage, _res: ServerResponse, next: (err?: unknown) => void): void {
  const type = (req.headers["content-type"] ?? "").split(";")[0].trim().toLowerCase();
  if (type !== "application/json") {
    next(new HttpError("unsupported_media_type"));
    return;
  }
  next();
}

export function sessionsRouter(store: SessionStore, ingress: GatewayIngress, bodyLimitBytes: number): Router {
  const router = Router();
  router.get("/api/sessions", async (req, res) => {
    const limit = listLimit(req.query.limit);
    const sessions = await store.listSessions({ limit });
    const out = await Promise.all(
      sessions.map(async (s) => {
        const conversationId = await store.conversationIdOf(s.id);
        const [lease, pending] = await Promise.all([store.getSessionTurnLease(conversationId), store.pendingInbox(conversationId, 1000)]);
        const running = lease !== null && lease.expires_at * 1000 > Date.now();
        const state = s.ended_at ? "ended" : running ? (pending.length > 1 ? "running+queued" : "running") : pending.length > 0 ? "queued" : "idle";
        return {
          id: s.id,
          source: s.source,
          session_key: s.session_key,
          started_at: s.started_at,
          last_activity: s.last_activity ?? s.started_at,
          state,
          // The row a running turn works on is still pending until the turn records its outcome.
          queued: Math.max(0, pending.length - (running ? 1 : 0)),
          parent_session_id: s.parent_session_id,
          end_reason: s.end_reason,
          title: s.title,
        };
      }),
    );
    res.json({ sessions: out });
  });

  router.get("/api/sessions/:id/messages", async (req, res) => {
    const id = req.params.id;
    if (!(await store.getSession(id))) throw new HttpError("session_not_found", `no session ${id}`);
    const rows = await store.getMessages(id);
    // A compacted session goes on in a child: say where, so clients can follow the conversation.
    const tip = await store.resolveTip(id);
    res.json({
      session_id: id,
      ...(tip !== id ? { continued_in: tip } : {}),
      messages: rows.map((m) => ({
        id: m.id,
        role: m.role,
        content: m.content,
        platform_message_id: m.platform_message_id,
        display_kind: m.display_kind,
        display_metadata: m.display_metadata,
        timestamp: m.timestamp,
        tool_calls: m.tool_calls,
        tool_call_id: m.tool_call_id,
        tool_name: m.tool_name,
        // Images as links to the route below (same key), not inline bytes.
        ...(m.attachments?.length
          ? {
              attachments: m.attachments.map((a) => ({
                id: a.id,
                content_type: a.content_type,
                size_bytes: a.size_bytes,
                name: a.name ?? null,
                url: `/api/sessions/${encodeURIComponent(id)}/attachments/${a.id}`,
              })),
            }
          : {}),
      })),
    });
  });

  router.get("/api/sessions/:id/attachments/:attachmentId", async (req, res) => {
    const id = req.params.id;
    const attachmentId = Number(req.params.attachmentId);
    const attachment = Number.isSafeInteger(attachmentId) && attachmentId > 0 ? await store.getAttachment(attachmentId) : null;
    // Only through the session whose transcript holds it.
    if (!attachment || attachment.session_id !== id) throw new HttpError("attachment_not_found", `no attachment ${req.params.attachmentId} in session ${id}`);
    res.setHeader("Content-Type", attachment.content_type);
    res.setHeader("Content-Length", String(attachment.data.byteLength));
    // Stored user content: shown as the image it is, never run as a page.
    res.setHeader("X-Content-Type-Options", "nosniff");
    res.setHeader("Content-Security-Policy", "default-src 'none'; sandbox");
    res.setHeader("Cache-Control", "private, max-age=3600");
    res.end(Buffer.from(attachment.data.buffer, attachment.data.byteOffset, attachment.data.byteLength));
  });

  router.post("/api/sessions/:id/interrupt", requireJsonContent, express.json({ limit: bodyLimitBytes }), async (req, res) => {
    const parsed = interruptBody.safeParse(req.body ?? {});
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new HttpError("invalid_body", `${issue.path.join(".") || "body"}: ${issue.message}`);
    }
    const id = req.params.id;
    if (!(await store.getSession(id))) throw new HttpError("session_not_found", `no session ${id}`);
    await ingress.interrupt(id, parsed.data);
    res.status(202).json({ interrupted: true, session_id: id, hard: parsed.data.hard ?? false });
  });
  return router;
}
