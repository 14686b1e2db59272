// GET /whatsapp/webhook: Meta's subscription handshake (the verify token, answered with the
// challenge). POST /whatsapp/webhook: messages and statuses, signed with the app secret over the
// raw bytes; every message is recorded before the 200, and the turns run later.
import { Router, type Request } from "express";
import type { Logger } from "pino";
import { sendError } from "../../gateway/http-errors.js";
import { postRoute, readRawBody } from "../shared/http.js";
import type { WhatsAppIntake, WhatsAppIntakeSummary } from "./intake.js";
import { parseWhatsAppWebhook, WHATSAPP_OBJECT } from "./payload.js";
import { verifyTokenMatches, verifyWhatsAppSignature, WHATSAPP_SIGNATURE_HEADER } from "./signature.js";

export const WHATSAPP_WEBHOOK_PATH = "/whatsapp/webhook";

/** Meta's challenges are short numbers; anything far longer is not a handshake. */
const MAX_CHALLENGE_LENGTH = 512;

export interface WhatsAppRouteContext {
  appSecret: string;
  verifyToken: string;
  bodyLimitBytes: number;
  logger: Logger;
  intake: WhatsAppIntake;
}

export function whatsappRoutes(ctx: WhatsAppRouteContext): Router {
  const router = Router();
  const log = ctx.logger;

  router.get(WHATSAPP_WEBHOOK_PATH, (req, res) => {
    const query = queryOf(req);
    if (query.get("hub.mode") !== "subscribe" || !verifyTokenMatches(ctx.verifyToken, query.get("hub.verify_token"))) {
      log.warn("whatsapp webhook verification refused");
      sendError(res, "verification_failed");
      return;
    }
    const challenge = query.get("hub.challenge");
    if (!challenge || challenge.length > MAX_CHALLENGE_LENGTH) {
      sendError(res, "invalid_challenge");
      return;
    }
    // Plain text, never sniffed as HTML: the challenge is echoed as Meta sent it.
    res.status(200).set("x-content-type-options", "nosniff").type("text/plain").send(challenge);
  });

  postRoute(router, WHATSAPP_WEBHOOK_PATH, ctx, async (req, res) => {
    const raw = readRawBody(req);
    const check = verifyWhatsAppSignature(ctx.appSecret, req.get(WHATSAPP_SIGNATURE_HEADER), raw);
    if (!check.ok) {
      log.warn({ reason: check.reason }, "whatsapp webhook refused");
      sendError(res, "invalid_signature", check.reason);
      return;
    }
    const parsed = parseWhatsAppWebhook(raw);
    if (!parsed.ok) {
      sendError(res, "invalid_body", parsed.message);
      return;
    }
    if (parsed.webhook.object !== WHATSAPP_OBJECT) {
      // Signed by our app but about something else (a page, an Instagram account): not ours.
      res.status(200).json({ ignored: true });
      return;
    }
    let summary: WhatsAppIntakeSummary;
    try {
      summary = await ctx.intake(parsed.webhook);
    } catch (error) {
      // Not (all) recorded: a non-2xx answer makes Meta deliver the body again.
      log.error({ err: error }, "whatsapp webhook could not be recorded");
      sendError(res, "dependency_unavailable");
      return;
    }
    res.status(200).json(summary);
  });

  return router;
}

/** The query as sent: `hub.mode` is one key with a dot, whatever query parser the app uses. */
function queryOf(req: Request): URLSearchParams {
  const url = req.originalUrl;
  const at = url.indexOf("?");
  return new URLSearchParams(at === -1 ? "" : url.slice(at + 1));
}
