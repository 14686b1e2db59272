// The Cloud API calls we make: `POST {api}/{phone-number-id}/messages` with the bearer token, for
// a text message and for marking a received message read. Graph errors become the gateway's
// send errors: rate limits -> RateLimitedError (the ledger waits and retries), credentials and
// bad requests -> PermanentSendError, the rest (5xx, transient, network) -> retried.
import { PermanentSendError, RateLimitedError } from "../../gateway/types.js";
import { parseRetryAfter } from "../../shared/retry-after.js";

/** Which limit was hit: the business number's throughput, or messages to one person. */
export type WhatsAppLimitScope = "number" | "pair";

export class WhatsAppRateLimitedError extends RateLimitedError {
  constructor(
    retryAfterMs: number,
    readonly scope: WhatsAppLimitScope,
    message: string,
  ) {
    super(retryAfterMs, message);
    this.name = "WhatsAppRateLimitedError";
  }
}

/** Graph's error body: `{"error": {message, type, code, error_subcode?, error_data?, is_transient?}}`. */
interface GraphError {
  message?: string;
  type?: string;
  code?: number;
  error_subcode?: number;
  error_data?: { details?: string };
  is_transient?: boolean;
}

/** (Business, customer) pair limit: about one message every 6 s to the same person. */
export const PAIR_RATE_LIMIT_CODE = 131056;
/** Cloud API throughput of the business number (80 messages/s by default). */
export const THROUGHPUT_LIMIT_CODE = 130429;
/** App-level (4) and business-account-level (80007) call limits: windows of minutes to an hour. */
const CALL_LIMIT_CODES = new Set([4, 80007]);

/** Waits when the answer carries no Retry-After. */
export const RATE_LIMIT_WAIT_MS = { throughput: 1_000, pair: 6_000, calls: 60_000 } as const;

/** Graph codes that mean the token or its permissions are wrong: no retry can fix them. */
function isAuthCode(code: number | undefined): boolean {
  return code !== undefined && (code === 0 || code === 3 || code === 10 || code === 190 || code === 131005 || (code >= 200 && code <= 299));
}

export interface WhatsAppTextMessage {
  to: string;
  body: string;
  /** The wamid this answers (shown as a quote above the reply); null for none. */
  replyTo: string | null;
}

export class WhatsAppGraph {
  private readonly endpoint: string;

  constructor(
    apiUrl: string,
    phoneNumberId: string,
    private readonly accessToken: string,
    private readonly fetchFn: typeof fetch = fetch,
    private readonly timeoutMs = 15_000,
  ) {
    this.endpoint = `${apiUrl.replace(/\/+$/, "")}/${encodeURIComponent(phoneNumberId)}/messages`;
  }

  /** Sends a text message; returns its wamid. */
  async sendText(message: WhatsAppTextMessage): Promise<string> {
    const answer = await this.post("send", {
      messaging_product: "whatsapp",
      to: message.to,
      type: "text",
      text: { body: message.body },
      ...(message.replyTo ? { context: { message_id: message.replyTo } } : {}),
    });
    const id = (answer as { messages?: Array<{ id?: unknown }> } | null)?.messages?.[0]?.id;
    if (typeof id !== "string" || id === "") throw new Error("WhatsApp send answered without a message id");
    return id;
  }

  /** Marks a received message (and the ones before it) read: the person sees blue ticks. */
  async markRead(messageId: string): Promise<void> {
    await this.post("mark read", { messaging_product: "whatsapp", status: "read", message_id: messageId });
  }

  private async post(what: string, payload: Record<string, unknown>): Promise<unknown> {
    let response: Response;
    try {
      response = await this.fetchFn(this.endpoint, {
        method: "POST",
        headers: { Authorization: `Bearer ${this.accessToken}`, "Content-Type": "application/json" },
        body: JSON.stringify(payload),
        signal: AbortSignal.timeout(this.timeoutMs),
      });
    } catch (error) {
      throw new Error(`WhatsApp ${what} request failed: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
    }
    const text = await response.text();
    const body = parseJson(text);
    if (response.ok) return body;
    throw graphError(what, response.status, response.headers.get("retry-after"), body);
  }
}

/** A failed Graph answer as the send error the ledger acts on. */
export function graphError(what: string, status: number, retryAfter: string | null, body: unknown): Error {
  const error = ((body as { error?: GraphError } | null)?.error ?? {}) as GraphError;
  const code = typeof error.code === "number" ? error.code : undefined;
  const details = error.error_data?.details;
  const label = `WhatsApp ${what}: HTTP ${status}${code !== undefined ? ` (code ${code})` : ""}${error.message ? ` ${error.message}` : ""}${details ? ` — ${details}` : ""}`;
  const waitMs = (fallback: number) => parseRetryAfter(retryAfter) ?? fallback;
  if (code === PAIR_RATE_LIMIT_CODE) return new WhatsAppRateLimitedError(waitMs(RATE_LIMIT_WAIT_MS.pair), "pair", label);
  if (code === THROUGHPUT_LIMIT_CODE) return new WhatsAppRateLimitedError(waitMs(RATE_LIMIT_WAIT_MS.throughput), "number", label);
  if (code !== undefined && CALL_LIMIT_CODES.has(code)) return new WhatsAppRateLimitedError(waitMs(RATE_LIMIT_WAIT_MS.calls), "number", label);
  if (status === 429) return new WhatsAppRateLimitedError(waitMs(RATE_LIMIT_WAIT_MS.throughput), "number", label);
  if (status === 401 || status === 403 || isAuthCode(code)) return new PermanentSendError(label);
  if (error.is_transient === true || status >= 500 || status === 408) return new Error(label);
  if (status >= 400) return new PermanentSendError(label);
  return new Error(label);
}

function parseJson(text: string): unknown {
  if (text === "") return null;
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}
