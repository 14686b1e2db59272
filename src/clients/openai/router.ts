// The OpenAI-compatible HTTP API. The app guards /v1 with the bearer key before these routes.
import express, { type Request, type Router } from "express";
import { sendError } from "../../gateway/http-errors.js";
import { checkBeforeParse, checkBodyLimit, parserLimitBytes } from "./body-limit.js";
import { handleChatCompletion, servedModelName, type ApiServerDeps } from "./chat-completions.js";

const CHAT_COMPLETIONS_PATH = "/v1/chat/completions";

export function createApiServerRouter(deps: ApiServerDeps): Router {
  const router = express.Router();
  const bodyBytes = new WeakMap<Request, number>();
  const json = express.json({
    limit: parserLimitBytes(deps.config),
    // Runs on the inflated bytes before the parser; an HttpError thrown here is the answer.
    verify: (req, _res, buf, encoding) => {
      bodyBytes.set(req as Request, buf.length);
      checkBeforeParse(deps.config, decode(buf, encoding));
    },
  });
  // Model "creation" time: when this server started serving it.
  const created = Math.floor(Date.now() / 1000);
  const model = () => ({ id: servedModelName(deps.config), object: "model", created, owned_by: "switchboard" });

  router.post(CHAT_COMPLETIONS_PATH, json, (req, res) => {
    checkBodyLimit(deps.config, bodyBytes.get(req) ?? 0, req.body);
    return handleChatCompletion(deps, { headers: req.headers, body: req.body }, res);
  });

  router.get("/v1/models", (_req, res) => {
    res.json({ object: "list", data: [model()] });
  });

  router.get("/v1/models/:id", (req, res) => {
    const served = model();
    if (req.params.id !== served.id) {
      sendError(res, "model_not_found", `The model '${req.params.id}' does not exist; this server serves '${served.id}'`);
      return;
    }
    res.json(served);
  });

  return router;
}

/** The body as text in its declared charset (JSON's are UTF-8 and UTF-16); a charset the decoder lacks reads as Latin-1. */
function decode(buf: Buffer, encoding: string): string {
  try {
    return new TextDecoder(encoding).decode(buf);
  } catch {
    return buf.toString("latin1");
  }
}
