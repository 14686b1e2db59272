// Who the bot is: its id and @username from getMe, asked once per process (again after a
// failure). Group messages are addressed by that username, so an update waits for it.
import type { Api } from "grammy";
import type { TelegramBotIdentity } from "./message.js";
import { call } from "./api.js";

export class TelegramIdentity {
  private pending: Promise<TelegramBotIdentity> | null = null;

  constructor(private readonly api: Api) {}

  /** The bot's identity; rejects when getMe fails (the next call asks again). */
  resolve(): Promise<TelegramBotIdentity> {
    this.pending ??= call("getMe", () => this.api.getMe()).then(
      (me) => {
        if (!me.username) throw new Error("Telegram getMe returned no username");
        return { id: me.id, username: me.username };
      },
    );
    const pending = this.pending;
    pending.catch(() => {
      if (this.pending === pending) this.pending = null;
    });
    return pending;
  }
}
