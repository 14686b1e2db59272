// Two real servers on loopback built from the same adapter, for tests that compare the HTTP fast
// path with express: express alone, and the fast path in front of express, each counting the
// requests that reached express.
import { createServer, request, type RequestListener, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Router } from "express";
import { hostAllowed, NO_EXTRA_BROWSER_RULES } from "../../../src/clients/browser-rules.js";
import type { PlainPostRoute } from "../../../src/gateway/types.js";
import { buildApp } from "../../../src/main/app.js";
import { withFastPath } from "../../../src/main/http-fast-path.js";
import { silentLogger } from "../../adapters/support/http.js";
import type { RecordingIngress } from "../../adapters/support/recording-ingress.js";
import { rawRequest, type RawResponse } from "../../bad-input/raw-http.js";

export interface Side {
  url: string;
  ingress: RecordingIngress;
  /** Requests that reached the express app. */
  expressHits: number;
  close(): Promise<void>;
}

/** What the two servers are built from: an adapter's express routes and its plain routes. */
export interface AdapterRoutes {
  routes(ingress: RecordingIngress): Router;
  plainRoutes(ingress: RecordingIngress): readonly PlainPostRoute[];
}

async function listen(listener: RequestListener): Promise<{ server: Server; url: string }> {
  const server = createServer(listener);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

/** The adapter's routes in the gateway's express app, with or without the fast path in front. */
export async function serveSide(adapter: AdapterRoutes, ingress: RecordingIngress, options: { fast: boolean; apiKey: string | null }): Promise<Side> {
  const app = buildApp({ logger: silentLogger, apiKey: options.apiKey, publicRoutes: [adapter.routes(ingress)], protectedRoutes: [], operationalRoutes: [] });
  const counted: RequestListener = (req, res) => {
    side.expressHits++;
    app(req, res);
  };
  const listener = options.fast
    ? withFastPath({
        routes: adapter.plainRoutes(ingress),
        hostAllowed: options.apiKey === null ? (req) => hostAllowed(req, NO_EXTRA_BROWSER_RULES) : undefined,
        logger: silentLogger,
        fallback: counted,
      })
    : counted;
  const { server, url } = await listen(listener);
  const side: Side = {
    url,
    ingress,
    expressHits: 0,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return side;
}

/** What a client can tell apart in an answer, besides express's ETag on JSON bodies. */
export function answerOf(res: RawResponse): { status: number; contentType: unknown; contentLength: unknown; body: string } {
  return { status: res.status, contentType: res.headers["content-type"], contentLength: res.headers["content-length"], body: res.body };
}

/** A body sent in chunks without a Content-Length (Transfer-Encoding: chunked). */
export function chunkedRequest(base: string, path: string, headers: Record<string, string>, chunks: string[]): Promise<RawResponse> {
  const url = new URL(base);
  return new Promise((resolve, reject) => {
    const req = request({ host: url.hostname, port: url.port, method: "POST", path, headers, agent: false }, (res) => {
      const parts: Buffer[] = [];
      res.on("data", (c: Buffer) => parts.push(c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(parts).toString("utf8") }));
    });
    req.on("error", reject);
    for (const chunk of chunks) req.write(chunk);
    req.end();
  });
}

/** The request a case sends to both servers (POST to the route's path unless it says otherwise). */
export interface SameRequest {
  method?: string;
  path?: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
}

/** The same request to both servers; both answers, express's first. */
export async function sendToBoth(sides: { express: Side; fast: Side }, defaultPath: string, options: SameRequest): Promise<[RawResponse, RawResponse]> {
  const req = { method: options.method ?? "POST", path: options.path ?? defaultPath, headers: options.headers, body: options.body };
  return [await rawRequest(sides.express.url, req), await rawRequest(sides.fast.url, req)];
}

/** Both servers, express alone and the fast path in front, with the same API key. */
export async function servePair(serve: (options: { fast: boolean; apiKey: string | null }) => Promise<Side>, apiKey: string | null): Promise<{ express: Side; fast: Side }> {
  return { express: await serve({ fast: false, apiKey }), fast: await serve({ fast: true, apiKey }) };
}

export async function closePair(sides: { express?: Side; fast?: Side }): Promise<void> {
  await sides.express?.close();
  await sides.fast?.close();
}
