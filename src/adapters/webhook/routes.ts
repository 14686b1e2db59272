// POST /webhooks/:route — signed deliveries, deduplicated by an id the signature covers.
// A sync route answers with the reply; a callback route answers 202 and the reply is POSTed,
// signed, to the route's callback_url. The route answers through webhookAnswer (answer.ts).
import { Router } from "express";
import type { GatewayIngress } from "../../gateway/types.js";
import { postRoute, readRawBody, sendPlainAnswer } from "../shared/http.js";
import { webhookAnswer, type WebhookAnswerContext } from "./answer.js";

export interface WebhookRouteContext extends WebhookAnswerContext {
  bodyLimitBytes: number;
}

export function webhookRoutes(ingress: GatewayIngress, ctx: WebhookRouteContext): Router {
  const router = Router();
  const answer = webhookAnswer(ingress, ctx);
  postRoute(router, "/webhooks/:route", ctx, async (req, res) => {
    sendPlainAnswer(res, await answer(String(req.params.route), req.headers, readRawBody(req)));
  });
  return router;
}
