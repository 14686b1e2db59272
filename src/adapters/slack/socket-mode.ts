// The Slack Socket Mode connection (the official @slack/socket-mode client): apps.connections.open
// with the app-level token against the configured API URL, then a WebSocket that delivers
// envelopes. Envelopes go, one at a time and in arrival order, to a handler that acknowledges
// each one itself.
//
// Reconnecting is ours, not the SDK's: its own loop can fail where nobody catches it, and cannot
// be stopped while apps.connections.open is in flight. Every end of a connection (a `disconnect`
// envelope such as refresh_requested, or the socket closing) leads to a new
// apps.connections.open: at once after a connection that lasted, shortly after one that did not,
// and with growing delays while connecting keeps failing.
import { setTimeout as sleep } from "node:timers/promises";
import { SocketModeClient } from "@slack/socket-mode";
import { WebAPIPlatformError, WebAPIRateLimitedError, type FetchFunction } from "@slack/web-api";
import type { Logger } from "pino";
import { slackLoggerFor } from "./client.js";
import type { SocketModeEnvelope } from "./socket-envelopes.js";

/** A connection that stayed up this long was healthy: the next one is opened without delay. */
const STABLE_CONNECTION_MS = 10_000;
const FIRST_RETRY_DELAY_MS = 500;
const MAX_RETRY_DELAY_MS = 30_000;
/** How long stop() waits for envelopes in hand and the close handshake before leaving the rest to the SDK's own timers. */
const STOP_WAIT_MS = 5_000;
const CONNECTIONS_OPEN_TIMEOUT_MS = 15_000;
/** Slack says `hello` right after the socket opens; a connection that never does is dropped. */
const HELLO_TIMEOUT_MS = 30_000;

/** apps.connections.open errors that mean the app-level token itself is wrong. */
const APP_TOKEN_ERRORS = new Set([
  "account_inactive",
  "invalid_auth",
  "not_allowed_token_type",
  "not_authed",
  "token_expired",
  "token_revoked",
]);

export interface SlackSocketModeOptions {
  appToken: string;
  /** The Web API base URL (apps.connections.open is a Web API call). */
  apiUrl: string;
  logger: Logger;
  onEnvelope(envelope: SocketModeEnvelope): Promise<void>;
}

export interface SlackSocketMode {
  stop(): Promise<void>;
}

/** What the SDK hands to `slack_event` listeners. */
interface SdkSlackEvent {
  type: string;
  envelope_id?: string;
  body?: unknown;
  retry_num?: number;
  retry_reason?: string;
  ack(response?: Record<string, unknown>): Promise<void>;
}

/** Delay before the next try after `failures` failed tries to connect in a row. */
export function reconnectDelayMs(failures: number): number {
  return failures === 0 ? 0 : Math.min(MAX_RETRY_DELAY_MS, FIRST_RETRY_DELAY_MS * 2 ** (failures - 1));
}

export function startSlackSocketMode(options: SlackSocketModeOptions): SlackSocketMode {
  const log = options.logger.child({ component: "slack-socket-mode" });
  const stopping = new AbortController();
  const client = new SocketModeClient({
    appToken: options.appToken,
    autoReconnectEnabled: false,
    logger: slackLoggerFor(options.logger, "slack-socket-mode-sdk"),
    clientOptions: {
      slackApiUrl: options.apiUrl,
      timeout: CONNECTIONS_OPEN_TIMEOUT_MS,
      // Failures come back at once; the loop below owns the delays.
      retryConfig: { retries: 0 },
      rejectRateLimitedCalls: true,
      fetch: fetchUntil(stopping.signal),
    },
  });

  let pending: Promise<void> = Promise.resolve();
  client.on("slack_event", (event: SdkSlackEvent) => {
    // Once stopping, envelopes stay unacknowledged: Slack delivers them again elsewhere or later.
    if (!event.envelope_id || stopping.signal.aborted) return;
    const envelope: SocketModeEnvelope = {
      type: event.type,
      envelopeId: event.envelope_id,
      payload: event.body,
      retryAttempt: event.retry_num ?? 0,
      retryReason: event.retry_reason || null,
      ack: (payload) => event.ack(payload),
    };
    // One at a time: a conversation's messages reach the inbox in the order Slack sent them.
    pending = pending
      .then(() => options.onEnvelope(envelope))
      .catch((error: unknown) => log.error({ err: error, envelopeId: envelope.envelopeId }, "slack envelope handler failed"));
  });

  const nextDisconnect = (): { ended: Promise<void>; cancel(): void } => {
    let done: () => void = () => undefined;
    const ended = new Promise<void>((resolve) => {
      done = resolve;
    });
    client.once("disconnected", done);
    return { ended, cancel: () => client.off("disconnected", done) };
  };

  const retryDelayAfter = (error: unknown): number => {
    if (error instanceof WebAPIRateLimitedError) {
      log.warn({ retryAfterSeconds: error.retryAfter }, "slack apps.connections.open rate limited");
      return error.retryAfter * 1000;
    }
    if (error instanceof WebAPIPlatformError && APP_TOKEN_ERRORS.has(error.data.error)) {
      log.error({ code: error.data.error }, "slack refused SLACK_APP_TOKEN for Socket Mode; retrying");
    } else {
      // The SDK rejects with nothing when the socket closes before `hello`.
      const reason = error instanceof Error ? error.message : "the connection closed before hello";
      log.warn({ err: reason }, "slack socket mode connection failed; retrying");
    }
    return 0;
  };

  const run = async (): Promise<void> => {
    let failures = 0;
    while (!stopping.signal.aborted) {
      let connectedAt: number | null = null;
      let retryAfterMs = 0;
      const disconnect = nextDisconnect();
      const helloTimer = setTimeout(() => {
        log.warn({ timeoutMs: HELLO_TIMEOUT_MS }, "slack socket mode sent no hello; reconnecting");
        void client.disconnect();
      }, HELLO_TIMEOUT_MS);
      try {
        await client.start().finally(() => clearTimeout(helloTimer));
        connectedAt = Date.now();
        if (stopping.signal.aborted) break;
        log.info("slack socket mode connected");
        await disconnect.ended;
        if (!stopping.signal.aborted) log.info("slack socket mode connection ended; reconnecting");
      } catch (error) {
        disconnect.cancel();
        if (stopping.signal.aborted) break;
        retryAfterMs = retryDelayAfter(error);
      }
      const lastedMs = connectedAt === null ? null : Date.now() - connectedAt;
      failures = lastedMs === null ? failures + 1 : 0;
      // A connection that ended soon after hello still waits a little: a server that keeps
      // closing at once is not hammered.
      const delayMs = Math.max(
        lastedMs === null ? reconnectDelayMs(failures) : lastedMs < STABLE_CONNECTION_MS ? FIRST_RETRY_DELAY_MS : 0,
        retryAfterMs,
      );
      if (delayMs > 0) await sleep(delayMs, undefined, { signal: stopping.signal }).catch(() => undefined);
    }
    // A start that completed after stop() began still has a socket open.
    await client.disconnect();
  };
  const running = run().catch((error: unknown) => log.error({ err: error }, "slack socket mode stopped unexpectedly"));

  return {
    async stop() {
      stopping.abort();
      // Envelopes already taken are recorded and acknowledged before the socket closes.
      const closed = pending.then(() => client.disconnect()).then(() => running);
      await Promise.race([closed, sleep(STOP_WAIT_MS, undefined, { ref: false })]);
    },
  };
}

/** Node's fetch, cut short when `stop` fires so that shutting down never waits on Slack. */
function fetchUntil(stop: AbortSignal): FetchFunction {
  return async (url, init) => {
    const response = await fetch(url, { ...init, signal: init?.signal ? AbortSignal.any([init.signal, stop]) : stop });
    // Node's Headers has entries(); the DOM typings here (without DOM.Iterable) do not declare it.
    return response as unknown as Awaited<ReturnType<FetchFunction>>;
  };
}
