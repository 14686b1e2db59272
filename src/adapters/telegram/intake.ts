// One Telegram update, whichever way it came in (webhook or long polling): parse it, decide
// whether it is a turn, and record it through the gateway. Throws when it could not be decided
// or recorded, so the webhook answers non-2xx (Telegram sends it again) and the poller does not
// move its offset past it.
import type { Logger } from "pino";
import type { AcceptResult, GatewayIngress } from "../../gateway/types.js";
import type { TelegramIdentity } from "./identity.js";
import { normaliseTelegramUpdate } from "./message.js";
import { parseTelegramUpdate } from "./updates.js";

export type TelegramOutcome =
  | { kind: "malformed" }
  | { kind: "ignored"; updateId: number; reason: string }
  | { kind: "recorded"; updateId: number; result: AcceptResult };

export interface TelegramIntake {
  update(input: unknown): Promise<TelegramOutcome>;
}

export interface TelegramIntakeContext {
  identity: TelegramIdentity;
  logger: Logger;
  now: () => number;
}

export function createTelegramIntake(ingress: GatewayIngress, ctx: TelegramIntakeContext): TelegramIntake {
  const log = ctx.logger;
  return {
    async update(input) {
      const update = parseTelegramUpdate(input);
      if (!update) return { kind: "malformed" };
      const decision = normaliseTelegramUpdate(update, await ctx.identity.resolve(), ctx.now());
      if (decision.kind === "ignore") {
        log.debug({ updateId: update.update_id, reason: decision.reason }, "telegram update ignored");
        return { kind: "ignored", updateId: update.update_id, reason: decision.reason };
      }
      const result = await ingress.accept(decision.message);
      if (result.status === "rejected") {
        log.warn({ updateId: update.update_id, reason: result.reason }, "telegram message rejected by the gateway");
      } else {
        log.debug({ updateId: update.update_id, status: result.status, sessionKey: decision.message.sessionKey }, "telegram message recorded");
      }
      return { kind: "recorded", updateId: update.update_id, result };
    },
  };
}
