// The access policy's pairings over the API (behind the key): GET /api/pairing lists live codes
// and approved users; POST /api/pairing/:code approves a code; DELETE
// /api/pairing/:platform/:userId removes a user's approval.
import { Router } from "express";
import type { SessionStore } from "../state/types.js";
import { HttpError } from "../gateway/http-errors.js";
import { requireJsonContent } from "./sessions-api.js";

const LIST_LIMIT = 500;

export function pairingRouter(store: SessionStore): Router {
  const router = Router();
  router.get("/api/pairing", async (_req, res) => {
    res.json({ pairings: await store.listPairings(LIST_LIMIT) });
  });
  // JSON only, like every state-changing API route (a cross-site form cannot send it).
  router.post("/api/pairing/:code", requireJsonContent, async (req, res) => {
    const code = String(req.params.code).trim().toUpperCase();
    const approved = await store.approvePairing(code, "api");
    if (!approved) throw new HttpError("pairing_not_found", `no live pairing code ${code}`);
    res.json({ approved });
  });
  router.delete("/api/pairing/:platform/:userId", async (req, res) => {
    if (!(await store.revokePairing(String(req.params.platform), String(req.params.userId)))) throw new HttpError("pairing_not_found");
    res.json({ revoked: { platform: req.params.platform, user_id: req.params.userId } });
  });
  return router;
}
