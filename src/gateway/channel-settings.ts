// Per-channel settings (YAML `channels:`): a conversation's system prompt, model, MCP servers,
// reply style and busy mode, by where its message came from. Each entry matches a platform (`slack`), a team or
// guild (`slack:team:T1`, `discord:guild:1`), or a channel or chat (`slack:channel:C1`,
// `telegram:chat:-100`); the most specific match wins (a channel over a team over a platform),
// then the first listed.
import { subjectsOf } from "./access.js";
import type { BusyMode } from "./config.js";
import type { InboundMessage } from "./types.js";

export const REPLY_STYLES = ["stream", "final"] as const;
export type ReplyStyle = (typeof REPLY_STYLES)[number];

export interface ChannelSettings {
  /** Its key in the file: shown in the turn's `turn.started` event. */
  name: string;
  match: string;
  systemPrompt?: string;
  model?: string;
  /** Only these MCP servers' tools (of those allowed on the platform); absent: all of them. */
  mcpServers?: string[];
  /** `stream`: the reply is shown as it is written (where the platform edits messages); `final`: posted once, done. */
  replyStyle?: ReplyStyle;
  /** What a message does while its conversation's turn runs; absent: the platform's. */
  busyMode?: BusyMode;
}

/** What a match names, and how specific it is. */
export const CHANNEL_MATCH = /^[a-z][a-z0-9_-]*(:(channel|chat|team|guild):\S+)?$/;

function specificity(match: string): number {
  if (/:(channel|chat):/.test(match)) return 3;
  if (/:(team|guild):/.test(match)) return 2;
  return 1;
}

/** The settings that apply to a message: the most specific match, else null (the defaults). */
export function channelSettingsFor(channels: readonly ChannelSettings[], message: InboundMessage): ChannelSettings | null {
  if (channels.length === 0) return null;
  const subjects = new Set([message.platform, ...subjectsOf(message)]);
  let best: ChannelSettings | null = null;
  for (const entry of channels) {
    if (!subjects.has(entry.match)) continue;
    if (best === null || specificity(entry.match) > specificity(best.match)) best = entry;
  }
  return best;
}
