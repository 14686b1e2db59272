// The HTTP side of a gateway: the express app behind the platform routes' guard, the WebSocket hub
// on the same server, and the listening socket. Loaded only by a process (or thread) that serves
// HTTP: the workers thread never needs these modules.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Express } from "express";
import { ApiKeyCheck } from "../clients/auth.js";
import { hostAllowed, originAllowed, type BrowserRules } from "../clients/browser-rules.js";
import { clientAddress } from "../clients/forwarded.js";
import { healthRouter } from "../clients/health.js";
import { createApiServerRouter, type ApiServerDeps } from "../clients/openai/index.js";
import { sessionsRouter } from "../clients/sessions-api.js";
import { pairingRouter } from "../clients/pairing-api.js";
import { usageRouter } from "../clients/usage-api.js";
import { adminRouter } from "../clients/admin.js";
import { consoleRouter } from "../clients/console.js";
import { acceptSend, attachWebSocketHub, type WebSocketHub } from "../clients/ws/index.js";
import type { McpServers } from "../agent/tools/mcp/index.js";
import { buildApp } from "./app.js";
import type { Cleanups } from "./cleanups.js";
import type { GatewayCore } from "./gateway-parts.js";
import { withPlatformGate } from "./platform-gate.js";
import type { GatewayOptions } from "./server.js";
import { VERSION } from "./version.js";

/** The Host and Origin rules and the API key, shared by HTTP and /ws (one count of wrong keys). */
interface Access {
  browser: BrowserRules;
  keyCheck: ApiKeyCheck;
}

/** Serves HTTP and /ws on the configured address; returns the port listened on. Stopping stops taking requests first. */
export async function serveHttp(core: GatewayCore, options: GatewayOptions, mcp: McpServers | null, cleanups: Cleanups): Promise<number> {
  const { config, logger } = core;
  const access: Access = {
    browser: { allowedHosts: config.allowedHosts, allowedOrigins: config.allowedOrigins, trustProxyHops: config.trustProxy },
    keyCheck: new ApiKeyCheck(config.apiKey),
  };
  const app = buildExpressApp(core, options, mcp, access);
  const server = createHttpServer(core, options, access, app);
  const hub = attachHub(server, core, access);
  const port = await listen(server, config.port, config.host);
  cleanups.push(async () => {
    await hub.close();
    await closeServer(server);
  });
  logger.info({ url: `http://${config.host}:${port}` }, "gateway listening");
  return port;
}

function buildExpressApp(core: GatewayCore, options: GatewayOptions, mcp: McpServers | null, { browser, keyCheck }: Access): Express {
  const { config, logger, ingress, store, redis: { redis }, queues, metrics, platforms } = core;
  return buildApp({
    logger,
    apiKey: config.apiKey,
    keyCheck,
    browser,
    operationalRoutes: [healthRouter({ store, redis, queues, metrics, workersEnabled: options.workers || options.workersThread !== undefined, workersThread: options.workersThread, moreMetrics: options.workersMetrics, version: VERSION, mcp: mcp ? () => mcp.status() : (options.workersMcp ?? null) })],
    publicRoutes: platforms.list.flatMap((a) => (a.routes ? [a.routes(ingress)] : [])),
    protectedRoutes: [
      createApiServerRouter(apiDeps(core)),
      sessionsRouter(store, ingress, config.bodyLimitBytes),
      pairingRouter(store),
      usageRouter(store),
      adminRouter(queues),
    ],
    consoleRoutes: [consoleRouter({ apiKeyRequired: config.apiKey !== null })],
  });
}

/** What the OpenAI-compatible API's express routes are built with. */
function apiDeps({ ingress, events, store, config, logger }: GatewayCore): ApiServerDeps {
  return { ingress, events, store, config, logger };
}

/** The express app behind the platform routes' guard (platform-gate.ts), which also times their answers. */
function createHttpServer(core: GatewayCore, options: GatewayOptions, { browser, keyCheck }: Access, app: Express): Server {
  const { metrics, platforms } = core;
  return createServer(withPlatformGate(app, {
    rules: platforms.list.flatMap((a) => a.requestRules?.() ?? []),
    clientAddress: (req) => clientAddress(req, browser.trustProxyHops),
    hostAllowed: keyCheck.required ? undefined : (req) => hostAllowed(req, browser),
    attemptLimits: options.platformAttemptLimits,
    unverifiedBudgetBytes: options.unverifiedBudgetBytes,
    onAnswered: (route, seconds) => metrics.ackSeconds.observe({ route }, seconds),
  }));
}

function attachHub(server: Server, { config, events, ingress, logger }: GatewayCore, { browser, keyCheck }: Access): WebSocketHub {
  return attachWebSocketHub(server, {
    bus: events,
    ingress,
    onSend: (frame) => acceptSend(ingress, frame),
    authenticate: (token, req) => {
      const decision = keyCheck.check(token, clientAddress(req, browser.trustProxyHops));
      return decision.ok || (decision.reason === "rate_limited" ? { retryAfterSeconds: decision.retryAfterSeconds } : false);
    },
    hostAllowed: config.apiKey === null ? (req) => hostAllowed(req, browser) : undefined,
    originAllowed: (req) => originAllowed(req, browser),
    clientAddress: (req) => clientAddress(req, browser.trustProxyHops),
    maxConnections: config.ws.maxConnections,
    maxConnectionsPerAddress: config.ws.maxConnectionsPerIp,
    logger,
    maxFrameBytes: config.ws.maxFrameBytes,
    maxSubscriptionsPerClient: config.ws.maxSubscriptions,
    heartbeatIntervalMs: config.ws.heartbeatMs,
  });
}

async function listen(server: Server, port: number, host: string): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve());
  });
  return (server.address() as AddressInfo).port;
}

/** Closes the listening socket and every connection still open on it. */
function closeServer(server: Server): Promise<void> {
  return new Promise<void>((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}
