// POST /v1/chat/completions: one request is one inbound message on the 'api' platform. It goes
// through the durable ingress like every platform's message, and the response waits for the turn
// that consumes it (as JSON, or streamed as SSE from the session's events).
import { createHash, randomUUID } from "node:crypto";
import type { IncomingHttpHeaders, ServerResponse } from "node:http";
import type { Logger } from "pino";
import type { EventSubscriber } from "../../bus/types.js";
import type { CoreConfig } from "../../gateway/config.js";
import { errorBody, HttpError, writeJson } from "../../gateway/http-errors.js";
import { SessionNotAddressableError, type AcceptResult, type GatewayIngress, type InboundMessage, type TurnOutcome } from "../../gateway/types.js";
import type { SessionStore } from "../../state/types.js";
import { CLIENT_SESSION_SOURCES } from "../client-sessions.js";
import { chatCompletion, completionChunk, completionId, usageChunk, type CompletionMeta } from "./completion.js";
import { resolveRequestImages } from "./images.js";
import { idempotencyKeyHeader, parseChatRequest, RequestError, sessionIdHeader, type ChatRequest } from "./request.js";
import { SseWriter } from "./sse.js";
import { TurnEventTracker, type TurnEnd } from "./turn-events.js";

export const API_PLATFORM = "api";

export interface ApiServerDeps {
  ingress: GatewayIngress;
  events: EventSubscriber;
  store: Pick<SessionStore, "conversationIdOf" | "getInboxRow" | "findInboxRow">;
  config: Pick<CoreConfig, "bodyLimitBytes" | "turnReplyTimeoutMs" | "llm" | "media">;
  logger: Logger;
}

/** The model name the API reports: the configured one, or the offline echo model. */
export function servedModelName(config: Pick<CoreConfig, "llm">): string {
  return config.llm.model ?? "echo";
}

// When the inbox row says the turn is over before its end event reached us, late deltas may still
// be on their way: wait this long for the end event so they are written in order.
const LATE_EVENTS_GRACE_MS = 500;

/** A turn's result as the response needs it, from its end event or from its inbox row. */
interface TurnResult {
  status: TurnOutcome["status"];
  reply: string | null;
}

interface PreparedRequest {
  request: ChatRequest;
  inbound: InboundMessage & { sessionId: string };
  /** The X-Session-Id the client sent, if any. */
  addressed: string | undefined;
}

/** A request as both routes hand it on: its headers and its parsed JSON body. */
export interface ChatCompletionCall {
  headers: IncomingHttpHeaders;
  body: unknown;
}

/**
 * Answer one chat completion on `res` (the express route's response). An HttpError thrown before
 * anything is written is the caller's to answer.
 */
export async function handleChatCompletion(deps: ApiServerDeps, call: ChatCompletionCall, res: ServerResponse): Promise<void> {
  const prepared = await prepare(deps, call);
  if (prepared.request.stream) {
    await streamCompletion(deps, prepared, res);
    return;
  }
  const accepted = await accept(deps, prepared.inbound);
  res.setHeader("X-Session-Id", prepared.addressed ?? accepted.sessionId);
  const outcome = await waitForOutcome(deps, accepted.inboxId, accepted.sessionId, accepted.status === "accepted");
  const failure = failureOf(outcome);
  if (failure) throw failure;
  if (outcome.status === "interrupted") res.setHeader("X-Turn-Status", "interrupted");
  // The row's time (read with the outcome), so a retried request gets the same answer, byte for byte.
  const meta = { id: completionId(accepted.inboxId), created: Math.floor(outcome.receivedAt), model: servedModelName(deps.config) };
  writeJson(res, 200, chatCompletion(meta, outcome.reply ?? ""));
}

/** A header's value as one string (express's `req.get`). */
function headerText(headers: IncomingHttpHeaders, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value.join(", ") : value;
}

async function prepare(deps: ApiServerDeps, call: ChatCompletionCall): Promise<PreparedRequest> {
  let addressed: string | undefined;
  let idempotencyKey: string | undefined;
  let request: ChatRequest;
  try {
    addressed = sessionIdHeader(headerText(call.headers, "x-session-id"));
    idempotencyKey = idempotencyKeyHeader(headerText(call.headers, "idempotency-key"));
    request = parseChatRequest(call.body);
  } catch (err) {
    if (err instanceof RequestError) throw new HttpError(err.code, err.message);
    throw err;
  }
  // Decoded and fetched before anything is recorded: a refused image refuses the request whole.
  const images = await resolveRequestImages(request.imageUrls, deps.config.media);
  // A key is scoped to the addressed session and to the request's body, so two conversations
  // (or two clients without one) that both number their requests from 1 never take each other's
  // answers: another body under the same key is another message.
  const platformMessageId = idempotencyKey ? idempotentMessageId(addressed, call.body, idempotencyKey) : randomUUID();
  // An addressed session's durable transcript is its history: the request's earlier messages are
  // not stored again. A request without one gets a fresh session seeded from them.
  let sessionId = addressed ?? `api-${randomUUID()}`;
  let seedHistory = addressed ? [] : request.history;
  if (idempotencyKey && !addressed) {
    // A retry must not seed a second, orphaned session before ingress recognises the duplicate.
    const earlier = await deps.store.findInboxRow(API_PLATFORM, platformMessageId);
    if (earlier) {
      sessionId = earlier.session_id;
      seedHistory = [];
    }
  }
  const inbound: InboundMessage & { sessionId: string } = {
    platform: API_PLATFORM,
    platformMessageId,
    sessionKey: `${API_PLATFORM}:${sessionId}`,
    sessionId,
    sessionSources: CLIENT_SESSION_SOURCES,
    chatId: null,
    threadId: null,
    userId: request.userId,
    text: request.input,
    receivedAt: Date.now(),
    replyTarget: null,
    ...(images.length > 0 ? { images } : {}),
    ...(seedHistory.length > 0 ? { seedHistory } : {}),
  };
  return { request, inbound, addressed };
}

/**
 * The inbox key of a request with an Idempotency-Key: the addressed session (if any), a SHA-256
 * of the parsed body serialised again (base64url) and the key.
 */
export function idempotentMessageId(sessionId: string | undefined, body: unknown, key: string): string {
  const digest = createHash("sha256").update(JSON.stringify(body) ?? "").digest("base64url");
  return `idem:${sessionId ?? ""}:${digest}:${key}`;
}

async function accept(deps: ApiServerDeps, inbound: InboundMessage): Promise<Exclude<AcceptResult, { status: "rejected" }>> {
  let result: AcceptResult;
  try {
    result = await deps.ingress.accept(inbound);
  } catch (err) {
    if (err instanceof SessionNotAddressableError) throw new HttpError("session_not_addressable", err.message);
    throw err;
  }
  if (result.status === "rejected") throw new HttpError("message_rejected", `message rejected: ${result.reason}`);
  return result;
}

async function waitForOutcome(deps: ApiServerDeps, inboxId: number, conversationId?: string, recordedNow = false): Promise<TurnOutcome> {
  try {
    return await deps.ingress.waitForOutcome(inboxId, deps.config.turnReplyTimeoutMs, conversationId, { recordedNow });
  } catch (err) {
    throw timeoutError(err) ?? err;
  }
}

function timeoutError(err: unknown): HttpError | null {
  if (!(err instanceof Error) || err.name !== "OutcomeTimeoutError") return null;
  return new HttpError("turn_timeout", err.message);
}

function failureOf(result: TurnResult): HttpError | null {
  if (result.status === "failed") return new HttpError("turn_failed", result.reply ? `the turn failed: ${result.reply}` : undefined);
  if (result.status === "rejected") return new HttpError("message_rejected", result.reply ? `message rejected: ${result.reply}` : undefined);
  return null;
}

async function metaFor(deps: ApiServerDeps, inboxId: number): Promise<CompletionMeta> {
  // The inbox row's time, so a retried request gets the same answer, byte for byte.
  const row = await deps.store.getInboxRow(inboxId);
  const created = row ? Math.floor(row.received_at) : Math.floor(Date.now() / 1000);
  return { id: completionId(inboxId), created, model: servedModelName(deps.config) };
}

// ---------------------------------------------------------------------------------------------
// Streaming

async function streamCompletion(deps: ApiServerDeps, prepared: PreparedRequest, res: ServerResponse): Promise<void> {
  const { events, store, logger } = deps;
  const sse = new SseWriter(res);
  let meta: CompletionMeta | null = null;
  const tracker = new TurnEventTracker((text) => {
    if (meta) sse.send(completionChunk(meta, { content: text }));
  });
  // Subscribe before accept: the turn may start (and stream) before accept() returns.
  let unsubscribe: () => void = () => undefined;
  let live = false;
  try {
    const conversationId = await store.conversationIdOf(prepared.inbound.sessionId);
    unsubscribe = await events.subscribe(conversationId, (event) => tracker.offer(event));
    live = true;
  } catch (err) {
    // Without events the reply still comes from the inbox row, just not word by word.
    logger.warn({ err: (err as Error).message }, "api: cannot subscribe to session events; streaming the reply whole");
  }
  try {
    const accepted = await accept(deps, prepared.inbound);
    meta = await metaFor(deps, accepted.inboxId);
    sse.start({ "X-Session-Id": prepared.addressed ?? accepted.sessionId });
    sse.send(completionChunk(meta, { role: "assistant", content: "" }));
    let result: TurnResult | null;
    if (accepted.status === "duplicate") {
      // A retry: the first request's turn is (or will be) the answer; send it whole.
      unsubscribe();
      result = await Promise.race([waitForOutcome(deps, accepted.inboxId), sse.disconnected.then(() => null)]);
    } else {
      tracker.bind(accepted.inboxId);
      result = await followTurn(deps, tracker, accepted.inboxId, sse, live);
    }
    if (!result || !sse.isOpen) return;
    const failure = failureOf(result);
    if (failure) {
      sendErrorChunk(sse, failure);
      return;
    }
    const remainder = accepted.status === "duplicate" ? (result.reply ?? "") : tracker.remainderOf(result.reply);
    if (remainder) sse.send(completionChunk(meta, { content: remainder }));
    sse.send(completionChunk(meta, {}, "stop"));
    if (prepared.request.includeUsage) sse.send(usageChunk(meta));
    sse.end();
  } catch (err) {
    if (!res.headersSent) throw err;
    const known = err instanceof HttpError ? err : null;
    if (!known) logger.error({ err }, "api: streaming completion failed");
    sendErrorChunk(sse, known ?? new HttpError("internal_error"));
  } finally {
    unsubscribe();
  }
}

/** Wait for our turn's end (from events, or from the inbox row); null when the client left. */
async function followTurn(deps: ApiServerDeps, tracker: TurnEventTracker, inboxId: number, sse: SseWriter, live: boolean): Promise<TurnResult | null> {
  const outcome = waitForOutcome(deps, inboxId);
  outcome.catch(() => undefined); // raced below; a late rejection is not unhandled
  const first = await Promise.race([
    tracker.end.then((end) => ({ end })),
    outcome.then((row) => ({ row })),
    sse.disconnected.then(() => null),
  ]);
  if (first === null) return null;
  if ("end" in first) {
    // turn.completed carries the final text; when an end event lacks it, the inbox row has it.
    if (first.end.finalResponse !== null || first.end.kind === "failed") return resultOfEnd(first.end);
    return outcome;
  }
  // The row is done but its end event has not reached us yet (a fast turn can finish before
  // pub/sub delivers its first event): give the turn's events a moment to arrive, in order.
  if (live) {
    const end = await within(tracker.end, LATE_EVENTS_GRACE_MS);
    if (end && (end.finalResponse !== null || end.kind === "failed")) return resultOfEnd(end);
  }
  return first.row;
}

function resultOfEnd(end: TurnEnd): TurnResult {
  if (end.kind === "failed") return { status: "failed", reply: end.finalResponse ?? end.error };
  return { status: end.kind === "completed" ? "done" : "interrupted", reply: end.finalResponse };
}

function sendErrorChunk(sse: SseWriter, error: HttpError): void {
  sse.send(errorBody(error));
  sse.end();
}

function within<T>(promise: Promise<T>, ms: number): Promise<T | null> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), ms)));
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
