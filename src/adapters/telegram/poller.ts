// Long polling: one poller per deployment. Every process that runs workers starts one; the one
// holding the singleton lock polls, the others stand by and take over when it dies (its TTL
// lapses, or at once when it was a dead process on this host) or stops (it releases the lock).
//
// Telegram confirms an update when a later getUpdates asks for an offset past it. The offset
// moves past an update only after the intake decided it (recorded it in the inbox, or found it is
// not a turn), so a crash between recording and confirming gets the update again and the inbox
// answers "duplicate": nothing lost, nothing answered twice.
import type { Api } from "grammy";
import type { Logger } from "pino";
import type { SingletonLock } from "../../bus/singleton-lock.js";
import { grammySignal, retryAfterMs, telegramDescription, telegramErrorCode } from "./api.js";
import type { TelegramIntake } from "./intake.js";
import { TELEGRAM_ALLOWED_UPDATES } from "./updates.js";

export interface TelegramPollerOptions {
  api: Api;
  lock: SingletonLock;
  intake: TelegramIntake;
  logger: Logger;
  /** getUpdates' long-poll timeout. Default 25 s. */
  pollTimeoutSeconds?: number;
  /** How often a standby tries to take the lock. Default 2 s. */
  standbyRetryMs?: number;
}

const MAX_BACKOFF_MS = 30_000;

export class TelegramPoller {
  private stopped = true;
  private lost = false;
  private loop: Promise<void> | null = null;
  private request: AbortController | null = null;
  private wake: (() => void) | null = null;
  private lastError: unknown = null;
  private lockUnreachable = false;
  private readonly log: Logger;

  constructor(private readonly options: TelegramPollerOptions) {
    this.log = options.logger.child({ component: "telegram-poller" });
  }

  start(): void {
    if (this.loop) return;
    this.stopped = false;
    this.loop = this.run().finally(() => (this.loop = null));
  }

  /** Stops polling (cutting a long poll short) and gives the lock up. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.request?.abort();
    this.wake?.();
    await this.loop;
  }

  private async run(): Promise<void> {
    const { lock } = this.options;
    while (!this.stopped) {
      const held = await lock.tryAcquire().then(
        (ok) => {
          this.lockUnreachable = false;
          return ok;
        },
        (error: Error) => {
          // Once per outage: a standby asks every few seconds.
          if (!this.lockUnreachable) this.log.warn({ err: error.message }, "telegram poller: cannot reach the lock; standing by");
          this.lockUnreachable = true;
          return false;
        },
      );
      if (!held) {
        await this.pause(this.options.standbyRetryMs ?? 2_000);
        continue;
      }
      this.log.info({ holder: lock.holder }, "telegram poller: holding the lock; polling");
      this.lost = false;
      const renewal = setInterval(() => void this.renew(), Math.max(100, Math.floor(lock.ttlMs / 3)));
      try {
        await this.pollWhileHeld();
      } catch (error) {
        // Nothing in there should throw; if it does, the lock is handed back rather than the process crashing.
        this.log.error({ err: (error as Error).message }, "telegram poller failed; handing the lock back");
        this.lost = true;
        await lock.release().catch(() => undefined);
        await this.pause(this.options.standbyRetryMs ?? 2_000);
      } finally {
        clearInterval(renewal);
      }
      if (this.stopped) {
        await lock.release().catch((error: Error) => this.log.warn({ err: error.message }, "telegram poller: could not release the lock"));
      } else {
        this.log.warn("telegram poller: lost the lock; standing by");
      }
    }
  }

  private async renew(): Promise<void> {
    const ours = await this.options.lock.renew().catch(() => false);
    if (!ours && !this.lost) {
      this.lost = true;
      this.request?.abort();
      this.wake?.();
    }
  }

  private holding(): boolean {
    return !this.stopped && !this.lost;
  }

  private async pollWhileHeld(): Promise<void> {
    const { api, intake, lock } = this.options;
    // getUpdates answers 409 while a webhook is set; this deployment polls, so remove it (its
    // pending updates stay and arrive here).
    await this.untilDone("deleteWebhook", () => api.deleteWebhook());
    let offset: number | undefined;
    let failures = 0;
    while (this.holding()) {
      // Checked before every poll too: a process that was paused past the TTL must not poll.
      if (!(await lock.renew().catch(() => false))) {
        this.lost = true;
        break;
      }
      const batch = await this.getUpdates(offset);
      if (batch === null) {
        if (!this.holding()) break;
        await this.pause(this.backoff(++failures, this.lastError));
        continue;
      }
      failures = 0;
      for (const update of batch) {
        if (!this.holding()) break;
        try {
          const outcome = await intake.update(update);
          if (outcome.kind === "malformed") this.log.warn({ updateId: update.update_id }, "telegram poller: skipping an update it cannot read");
        } catch (error) {
          // Not recorded: keep the offset before it, so the next poll gets it again.
          this.log.warn({ updateId: update.update_id, err: (error as Error).message }, "telegram poller: update not recorded; polling it again");
          await this.pause(this.backoff(++failures, null));
          break;
        }
        offset = update.update_id + 1;
      }
    }
    // Stopping: confirm what was recorded, so a restart does not fetch it again (harmless if it did).
    if (this.stopped && !this.lost && offset !== undefined) {
      await api.getUpdates({ offset, limit: 1, timeout: 0 }, grammySignal(AbortSignal.timeout(2_000))).catch(() => undefined);
    }
  }

  /** One long poll; null when it failed (the error is kept for the backoff). */
  private async getUpdates(offset: number | undefined): Promise<Array<{ update_id: number }> | null> {
    const controller = new AbortController();
    this.request = controller;
    try {
      return await this.options.api.getUpdates(
        { offset, timeout: this.options.pollTimeoutSeconds ?? 25, allowed_updates: TELEGRAM_ALLOWED_UPDATES },
        grammySignal(controller.signal),
      );
    } catch (error) {
      this.lastError = error;
      if (this.holding()) this.log.warn({ code: telegramErrorCode(error), err: (error as Error).message }, "telegram getUpdates failed");
      return null;
    } finally {
      this.request = null;
    }
  }

  /** How long to wait after `failures` failures in a row. */
  private backoff(failures: number, error: unknown): number {
    const code = telegramErrorCode(error);
    if (code === 429) return retryAfterMs(error) ?? 1_000;
    // Another poller outside this deployment, or a webhook set meanwhile: say so, and wait.
    if (code === 409) {
      this.log.error({ description: telegramDescription(error) }, "telegram getUpdates conflict: another bot instance polls, or a webhook is set");
      return 5_000;
    }
    return Math.min(MAX_BACKOFF_MS, 500 * 2 ** Math.min(failures, 6));
  }

  /** Retries `request` until it succeeds or polling ends. */
  private async untilDone(method: string, request: () => Promise<unknown>): Promise<void> {
    for (let failures = 1; this.holding(); failures++) {
      try {
        await request();
        return;
      } catch (error) {
        this.log.warn({ method, code: telegramErrorCode(error), err: (error as Error).message }, "telegram call failed; retrying");
        await this.pause(this.backoff(failures, error));
      }
    }
  }

  /** Sleeps; stop() or a lost lock cuts it short. */
  private pause(ms: number): Promise<void> {
    if (this.stopped) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done(): void {
        clearTimeout(timer);
        resolve();
      }
      this.wake = done;
    });
  }
}
