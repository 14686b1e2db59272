// The OpenAI-compatible HTTP API. The app guards /v1 with the bearer key before these routes.
import express, { type Request, type Router } from "express";
import { HttpError, sendError } from "../../gateway/http-errors.js";
import { handleChatCompletion, servedModelName, type ApiServerDeps } from "./chat-completions.js";
import { inlineImageChars } from "./images.js";

export function createApiServerRouter(deps: ApiServerDeps): Router {
  const router = express.Router();
  // Images come inline as base64 data URLs: the parser leaves room for a message's worth of them
  // (their own caps apply when they are decoded); everything else keeps to the body limit.
  const { bodyLimitBytes, media } = deps.config;
  const bodyBytes = new WeakMap<Request, number>();
  const json = express.json({
    limit: bodyLimitBytes + Math.ceil((media.maxMessageBytes * 4) / 3) + 1024 * media.maxImagesPerMessage,
    verify: (req, _res, buf) => void bodyBytes.set(req as Request, buf.length),
  });
  const withinBodyLimit = (req: Request): void => {
    if ((bodyBytes.get(req) ?? 0) - inlineImageChars(req.body) > bodyLimitBytes) {
      throw new HttpError(413, "body_too_large", "request body is larger than the configured limit");
    }
  };
  // Model "creation" time: when this server started serving it.
  const created = Math.floor(Date.now() / 1000);
  const model = () => ({ id: servedModelName(deps.config), object: "model", created, owned_by: "switchboard" });

  router.post("/v1/chat/completions", json, (req, res) => {
    withinBodyLimit(req);
    return handleChatCompletion(deps, req, res);
  });

  router.get("/v1/models", (_req, res) => {
    res.json({ object: "list", data: [model()] });
  });

  router.get("/v1/models/:id", (req, res) => {
    const served = model();
    if (req.params.id !== served.id) {
      sendError(res, 404, "model_not_found", `The model '${req.params.id}' does not exist; this server serves '${served.id}'`);
      return;
    }
    res.json(served);
  });

  return router;
}
