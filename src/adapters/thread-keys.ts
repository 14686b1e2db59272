// Threads the bot takes part in have sessions: their routing keys say which thread. This turns
// a stored session key back into the ThreadMemory key its adapter uses, so the memory can be
// rebuilt from the database after a restart or in another process.
import { discordThreadKey } from "./discord/channels.js";
import { slackThreadKey } from "./slack/events.js";

/** Session-key prefixes of platforms whose sessions can be threads. */
export const THREADED_SESSION_PREFIXES = ["slack:", "discord:"] as const;

/** `slack:T:C:ts[:user]` -> `T:C:ts`; `discord:G:C:thread[:user]` -> `discord-thread:thread`; else null. */
export function threadKeyForSessionKey(sessionKey: string): string | null {
  const [platform, a, b, c] = sessionKey.split(":");
  if (!a || !b || !c) return null;
  if (platform === "slack") return slackThreadKey(a, b, c);
  if (platform === "discord") return discordThreadKey(c);
  return null;
}
