// How Telegram's updates reach the gateway: the webhook route (with a secret), else long polling
// by the one process of the deployment that holds the poller lock (one poller per deployment, in
// the processes that run workers). Either way start() tells Telegram the bot's commands, and the
// webhook's address when one is set.
import type { Api } from "grammy";
import type { Logger } from "pino";
import type { SingletonLocks } from "../../bus/singleton-lock.js";
import type { GatewayIngress, PlatformAdapter } from "../../gateway/types.js";
import type { TelegramConfig } from "./config.js";
import type { TelegramIdentity } from "./identity.js";
import { createTelegramIntake } from "./intake.js";
import { TelegramPoller } from "./poller.js";
import { secretTokenProblem, TELEGRAM_WEBHOOK_PATH, telegramRoutes } from "./routes.js";
import { headerRule, platformBodyLimit } from "../shared/request-rules.js";
import { registerTelegramBot, type TelegramSetup } from "./setup.js";

/** The lock that makes one process of the deployment the poller. */
export const TELEGRAM_POLLER_LOCK = "telegram-poller";

export interface TelegramTransportsDeps {
  api: Api;
  identity: TelegramIdentity;
  locks: SingletonLocks;
  bodyLimitBytes: number;
  logger: Logger;
  now: () => number;
}

/** A Telegram update is a message and what it refers to: a few KB, far under this. */
const TELEGRAM_MAX_BODY_BYTES = 256 * 1024;

export type TelegramTransports = Pick<PlatformAdapter, "routes" | "requestRules"> & Required<Pick<PlatformAdapter, "start" | "stop">>;

export function telegramTransports(config: TelegramConfig, deps: TelegramTransportsDeps): TelegramTransports {
  const { api, identity, locks, logger, now } = deps;
  const webhookSecret = config.webhookSecret;
  const bodyLimitBytes = platformBodyLimit(deps.bodyLimitBytes, TELEGRAM_MAX_BODY_BYTES);
  let setup: TelegramSetup | null = null;
  let poller: TelegramPoller | null = null;

  const intakeFor = (ingress: GatewayIngress) => createTelegramIntake(ingress, { identity, logger, now });

  const stop = async (): Promise<void> => {
    setup?.stop();
    setup = null;
    await poller?.stop();
    poller = null;
  };

  return {
    routes: webhookSecret
      ? (ingress: GatewayIngress) =>
          telegramRoutes({ secret: webhookSecret, bodyLimitBytes, logger, intake: intakeFor(ingress) })
      : undefined,

    // The secret token is a header: the whole check is made before the body is read.
    requestRules: webhookSecret
      ? () => [headerRule(TELEGRAM_WEBHOOK_PATH, bodyLimitBytes, "invalid_secret_token", (headers) => secretTokenProblem(headers, webhookSecret))]
      : undefined,

    async start(ingress: GatewayIngress) {
      await stop();
      setup = registerTelegramBot(api, webhookSecret && config.webhookUrl ? { url: config.webhookUrl, secret: webhookSecret } : null, logger);
      if (!webhookSecret) {
        poller = new TelegramPoller({ api, lock: locks.lock(TELEGRAM_POLLER_LOCK), intake: intakeFor(ingress), logger });
        poller.start();
      }
    },

    stop,
  };
}
