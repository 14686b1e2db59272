// Telegram through a gateway: the bot's credentials, a model that can write a long reply, and
// what a test reads back about one update (its inbox row, its sent reply, the bot's messages).
import type { GatewayHandle } from "../../../src/main/server.js";
import type { CompletionRequest, CompletionResult, ModelProvider } from "../../../src/agent/types.js";
import { EchoProvider } from "../../../src/agent/providers/echo.js";
import { sleep } from "../../../src/agent/providers/abortable.js";
import type { DeliveryRow, InboxRow } from "../../../src/state/types.js";
import type { FakeUpdate } from "../../support/fake-telegram.js";
import { waitFor } from "../../support/gateway.js";
import { deliveriesOf, inboxRowOf } from "./probes.js";

/** A token of BotFather's shape: `<bot id>:<35 characters>`. */
export const TELEGRAM_TOKEN = "7012345678:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw4";
export const TELEGRAM_SECRET = "tg-webhook-secret_4f9a2c7e81";
export const TELEGRAM_BOT_USERNAME = "switchboard_test_bot";

export function updateMessageId(update: FakeUpdate): number {
  return (update.message as { message_id: number }).message_id;
}

export function inboxRowOfUpdate(gateway: GatewayHandle, update: FakeUpdate, timeoutMs = 5_000): Promise<InboxRow> {
  return inboxRowOf(gateway, "telegram", String(update.update_id), timeoutMs);
}

/** Waits until the reply to `update` is recorded as sent; returns its ledger row. */
export async function sentTelegramReply(gateway: GatewayHandle, update: FakeUpdate, timeoutMs = 15_000): Promise<DeliveryRow> {
  const row = await inboxRowOfUpdate(gateway, update, timeoutMs);
  return waitFor(
    async () => (await deliveriesOf(gateway, row.session_id)).find((d) => d.inbox_id === row.id && d.status === "sent"),
    timeoutMs,
    `sent reply to update ${update.update_id}`,
  );
}

/**
 * The echo model, except that a message holding `[[long:<n>]]` is answered with n characters of
 * words, streamed in a few large chunks.
 */
export class LongReplyProvider implements ModelProvider {
  readonly name = "echo";
  readonly model = "echo";
  private readonly echo: EchoProvider;

  constructor(private readonly chunkDelayMs: number) {
    this.echo = new EchoProvider({ chunkDelayMs });
  }

  async complete(request: CompletionRequest): Promise<CompletionResult> {
    const last = [...request.messages].reverse().find((m) => m.role === "user")?.content ?? "";
    const asked = /\[\[long:(\d+)\]\]/.exec(last);
    if (!asked) return this.echo.complete(request);
    const text = longText(Number(asked[1]));
    const chunks = 5;
    const size = Math.ceil(text.length / chunks);
    for (let i = 0; i < chunks; i++) {
      if (i > 0) await sleep(this.chunkDelayMs, request.signal);
      request.onDelta?.(text.slice(i * size, (i + 1) * size));
    }
    return { content: text, toolCalls: [], finishReason: "stop" };
  }
}

/** Exactly `length` characters of numbered words ("w1 w2 w3 ..."). */
export function longText(length: number): string {
  let text = "";
  for (let i = 1; text.length < length; i++) text += `${text ? " " : ""}w${i}`;
  return text.slice(0, length).trimEnd().padEnd(length, "x");
}
