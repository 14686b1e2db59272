// Discord REST calls (fetch), with failures mapped onto the gateway's send errors.
import { PermanentSendError, RateLimitedError } from "../../gateway/types.js";
import { parseRetryAfter, secondsToMs } from "../../shared/retry-after.js";

export interface DiscordMessageBody {
  content: string;
  message_reference?: { message_id: string; fail_if_not_exists: boolean };
  allowed_mentions?: { parse: string[]; replied_user?: boolean };
  flags?: number;
}

interface DiscordErrorBody {
  message?: string;
  code?: number;
  retry_after?: number;
}

/** Retries cannot fix these (besides 429, which is RateLimitedError). 408 is a timeout: retried. */
function isPermanentStatus(status: number): boolean {
  return status >= 400 && status < 500 && status !== 408 && status !== 429;
}

export class DiscordRestError extends PermanentSendError {
  constructor(
    message: string,
    readonly status: number,
    readonly discordCode: number | null,
  ) {
    super(message);
    this.name = "DiscordRestError";
  }
}

export class DiscordRest {
  constructor(
    private readonly apiUrl: string,
    private readonly botToken: string | null,
    private readonly fetchFn: typeof fetch = fetch,
    private readonly timeoutMs = 15_000,
  ) {}

  get hasBotToken(): boolean {
    return this.botToken !== null;
  }

  async createMessage(channelId: string, body: DiscordMessageBody): Promise<string> {
    return messageId(await this.request("POST", `/channels/${enc(channelId)}/messages`, body, true));
  }

  async editMessage(channelId: string, id: string, body: DiscordMessageBody): Promise<void> {
    await this.request("PATCH", `/channels/${enc(channelId)}/messages/${enc(id)}`, body, true);
  }

  async triggerTyping(channelId: string): Promise<void> {
    await this.request("POST", `/channels/${enc(channelId)}/typing`, undefined, true);
  }

  /** A follow-up to an interaction; right after a deferred response it fills that response in. */
  async followUp(applicationId: string, token: string, body: DiscordMessageBody): Promise<string> {
    return messageId(await this.request("POST", `/webhooks/${enc(applicationId)}/${enc(token)}`, body, false));
  }

  async editFollowUp(applicationId: string, token: string, id: string, body: DiscordMessageBody): Promise<void> {
    await this.request("PATCH", `/webhooks/${enc(applicationId)}/${enc(token)}/messages/${enc(id)}`, body, false);
  }

  private async request(method: string, path: string, body: unknown, needsBot: boolean): Promise<unknown> {
    const headers: Record<string, string> = { "User-Agent": "DiscordBot (switchboard, 0.1.0)" };
    if (needsBot) {
      if (!this.botToken) throw new PermanentSendError("Discord bot token is not configured");
      headers.Authorization = `Bot ${this.botToken}`;
    }
    if (body !== undefined) headers["Content-Type"] = "application/json";
    let response: Response;
    try {
      response = await this.fetchFn(`${this.apiUrl}${path}`, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(this.timeoutMs),
      });
    } catch (error) {
      throw new Error(`Discord ${method} request failed: ${error instanceof Error ? error.message : String(error)}`, {
        cause: error,
      });
    }
    const text = await response.text();
    const parsed = parseBody(text);
    if (response.ok) return parsed;
    const info = (typeof parsed === "object" && parsed !== null ? parsed : {}) as DiscordErrorBody;
    const label = `Discord ${method} ${routeLabel(path)}: HTTP ${response.status}${info.code ? ` (code ${info.code})` : ""}${info.message ? ` ${info.message}` : ""}`;
    if (response.status === 429) {
      const retryAfterMs =
        secondsToMs(info.retry_after) ??
        secondsToMs(response.headers.get("x-ratelimit-reset-after")) ??
        parseRetryAfter(response.headers.get("retry-after")) ??
        1000;
      throw new RateLimitedError(retryAfterMs, label);
    }
    if (isPermanentStatus(response.status)) throw new DiscordRestError(label, response.status, info.code ?? null);
    throw new Error(label);
  }
}

function enc(segment: string): string {
  return encodeURIComponent(segment);
}

/** The path without tokens, for error messages (interaction tokens are credentials). */
function routeLabel(path: string): string {
  return path.replace(/^\/webhooks\/([^/]+)\/[^/]+/, "/webhooks/$1/<token>");
}

function parseBody(text: string): unknown {
  if (text === "") return null;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

function messageId(body: unknown): string {
  if (typeof body === "object" && body !== null && typeof (body as { id?: unknown }).id === "string") {
    return (body as { id: string }).id;
  }
  throw new Error("Discord returned no message id");
}
