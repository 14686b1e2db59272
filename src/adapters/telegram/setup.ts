// What the gateway tells Telegram at start: the commands (setMyCommands) and, with a webhook URL,
// where to send updates (setWebhook with the secret and the update types the adapter handles).
// Retried in the background: Telegram being unreachable must not keep the gateway from starting.
import type { Api } from "grammy";
import type { BotCommand } from "grammy/types";
import type { Logger } from "pino";
import { telegramErrorCode } from "./api.js";
import { TELEGRAM_ALLOWED_UPDATES } from "./updates.js";

export const TELEGRAM_COMMANDS: BotCommand[] = [
  { command: "new", description: "Start a fresh conversation" },
  { command: "stop", description: "Stop the reply being written" },
  { command: "status", description: "Show this conversation's session and queue" },
  { command: "help", description: "List the commands" },
];

export interface TelegramWebhookRegistration {
  url: string;
  secret: string;
}

export interface TelegramSetup {
  stop(): void;
}

export function registerTelegramBot(
  api: Api,
  webhook: TelegramWebhookRegistration | null,
  logger: Logger,
): TelegramSetup {
  let stopped = false;
  let timer: NodeJS.Timeout | null = null;
  const steps: Array<{ name: string; run: () => Promise<unknown> }> = [
    { name: "setMyCommands", run: () => api.setMyCommands(TELEGRAM_COMMANDS) },
  ];
  if (webhook) {
    steps.push({
      name: "setWebhook",
      run: () => api.setWebhook(webhook.url, { secret_token: webhook.secret, allowed_updates: TELEGRAM_ALLOWED_UPDATES }),
    });
  }
  const attempt = async (index: number, failures: number): Promise<void> => {
    if (stopped || index >= steps.length) return;
    const step = steps[index];
    try {
      await step.run();
      logger.info({ method: step.name }, "telegram bot registered");
      await attempt(index + 1, 0);
    } catch (error) {
      if (stopped) return;
      const delayMs = Math.min(300_000, 2_000 * 2 ** failures);
      logger.warn({ method: step.name, code: telegramErrorCode(error), err: (error as Error).message, retryInMs: delayMs }, "telegram registration failed; retrying");
      timer = setTimeout(() => void attempt(index, failures + 1), delayMs);
      timer.unref();
    }
  };
  void attempt(0, 0);
  return {
    stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
    },
  };
}
