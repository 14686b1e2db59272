// /admin/queues: BullMQ's standard dashboard (bull-board) over the turn and delivery queues,
// behind the API key like /api (the app's guard runs before this router, for all of /admin).
//
// A browser cannot put a bearer header on a page load, so the dashboard also takes the key from
// the `switchboard_token` cookie (HttpOnly, SameSite=Strict, path /admin). Two ways to get it:
// - the console, once its key is accepted, calls POST /admin/session with the key as Bearer;
// - opening /admin/queues?token=KEY sets it and redirects to the same page without the token,
//   so the key does not stay in the address bar. That redirect is the only /admin request whose
//   `?token=` the guard reads (acceptsQueryToken).
//
// The dashboard can retry and delete jobs, so no other site may frame it (clickjacking).
//
// bull-board is loaded on the first request for the dashboard: a gateway whose dashboard nobody
// opens does not hold it (a few MB of heap) in memory.
import { Router, type Request, type RequestHandler, type Response } from "express";
import { requestToken, TOKEN_COOKIE } from "./auth.js";
import type { GatewayQueues } from "../gateway/queues.js";

export const ADMIN_QUEUES_PATH = "/admin/queues";
export const ADMIN_SESSION_PATH = "/admin/session";
const COOKIE_PATH = "/admin";

/** The admin redirect: a GET of the dashboard's page itself (with or without a trailing slash). */
export function acceptsQueryToken(req: Request): boolean {
  if (req.method !== "GET" && req.method !== "HEAD") return false;
  const path = new URL(req.originalUrl, "http://localhost").pathname;
  return path === ADMIN_QUEUES_PATH || path === `${ADMIN_QUEUES_PATH}/`;
}

/** No page of /admin may be shown inside another site's frame. */
export const noFraming: RequestHandler = (_req, res, next) => {
  res.setHeader("Content-Security-Policy", "frame-ancestors 'none'");
  res.setHeader("X-Frame-Options", "DENY");
  next();
};

function cookieAttributes(req: Request): string {
  // `Secure` where the request came over TLS: to the gateway, or to a proxy it trusts (TRUST_PROXY).
  return `Path=${COOKIE_PATH}; HttpOnly; SameSite=Strict${req.secure ? "; Secure" : ""}`;
}

function setTokenCookie(req: Request, res: Response, token: string): void {
  res.append("Set-Cookie", `${TOKEN_COOKIE}=${encodeURIComponent(token)}; ${cookieAttributes(req)}`);
}

function clearTokenCookie(req: Request, res: Response): void {
  res.append("Set-Cookie", `${TOKEN_COOKIE}=; Max-Age=0; ${cookieAttributes(req)}`);
}

/** Routes that hand the browser its dashboard cookie; the guard has checked the token already. */
function sessionRoutes(): Router {
  const router = Router();
  router.post(ADMIN_SESSION_PATH, (req, res) => {
    const token = requestToken(req);
    // Without a configured key the guard lets everyone in and there is nothing to remember.
    if (token) setTokenCookie(req, res, token);
    res.setHeader("Cache-Control", "no-store");
    res.status(204).end();
  });
  router.delete(ADMIN_SESSION_PATH, (req, res) => {
    clearTokenCookie(req, res);
    res.setHeader("Cache-Control", "no-store");
    res.status(204).end();
  });
  router.get(ADMIN_QUEUES_PATH, (req, res, next) => {
    const url = new URL(req.originalUrl, "http://localhost");
    const token = url.searchParams.get("token");
    if (!token) return next();
    setTokenCookie(req, res, token);
    url.searchParams.delete("token");
    res.setHeader("Cache-Control", "no-store");
    res.setHeader("Referrer-Policy", "no-referrer");
    res.redirect(303, `${url.pathname}${url.search}`);
  });
  return router;
}

async function loadDashboard(queues: GatewayQueues): Promise<RequestHandler> {
  const [{ createBullBoard }, { BullMQAdapter }, { ExpressAdapter }] = await Promise.all([
    import("@bull-board/api"), import("@bull-board/api/bullMQAdapter"), import("@bull-board/express"),
  ]);
  const serverAdapter = new ExpressAdapter();
  serverAdapter.setBasePath(ADMIN_QUEUES_PATH);
  createBullBoard({
    queues: [new BullMQAdapter(queues.turns, { readOnlyMode: false }), new BullMQAdapter(queues.deliveries)],
    serverAdapter,
    options: { uiConfig: { boardTitle: "Switchboard queues" } },
  });
  return serverAdapter.getRouter() as RequestHandler;
}

/** The dashboard, loaded by its first request (a failed load is tried again by the next one). */
function lazyDashboard(queues: GatewayQueues): RequestHandler {
  let dashboard: Promise<RequestHandler> | null = null;
  return (req, res, next) => {
    const loading = (dashboard ??= loadDashboard(queues));
    loading.then(
      (handler) => handler(req, res, next),
      (err: unknown) => {
        if (dashboard === loading) dashboard = null;
        next(err);
      },
    );
  };
}

export function adminRouter(queues: GatewayQueues): Router {
  const router = Router();
  router.use(COOKIE_PATH, noFraming);
  router.use(sessionRoutes());
  router.use(ADMIN_QUEUES_PATH, lazyDashboard(queues));
  return router;
}
