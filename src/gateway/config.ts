// The settings the core runs with. The composition root (main/config.ts) loads them from the
// environment and the YAML file, with the adapters' and clients' sections beside them.
import type { McpServerConfig } from "../agent/tools/mcp/config.js";
import type { MediaSettings } from "./media.js";
import type { AccessConfig } from "./access.js";
import type { LimitsConfig } from "./usage-limits.js";
import type { ChannelSettings } from "./channel-settings.js";

export const BUSY_MODES = ["queue", "interrupt", "collect", "steer"] as const;
export type BusyMode = (typeof BUSY_MODES)[number];

export interface CoreConfig {
  workerConcurrency: number;
  /** BullMQ prefix and the root of every Redis key of this deployment. */
  queuePrefix: string;
  llm: { baseUrl: string | null; apiKey: string | null; model: string | null };
  echoChunkDelayMs: number;
  /** Whether the echo model obeys `[[tool:...]]` in user messages (tests and demos only). */
  echoToolDirectives: boolean;
  systemPrompt: string;
  busyModes: Record<string, BusyMode>;
  defaultBusyMode: BusyMode;
  collectMaxMessages: number;
  sessionPerUser: string[];
  bodyLimitBytes: number;
  maxMessageChars: number;
  /** Images: caps, download time, and whether the API may fetch loopback URLs (tests). */
  media: MediaSettings;
  /** Past `maxChars` of transcript a session is summarised into a child session; null: never. */
  compaction: { maxChars: number; keepRecent: number } | null;
  leaseTtlSeconds: number;
  leaseWaitSeconds: number;
  /** How often a process with workers looks for turns whose holder died (turn-recovery.ts). */
  turnRecoveryIntervalMs: number;
  shutdownTimeoutMs: number;
  turnReplyTimeoutMs: number;
  /** MCP tool servers by name; their tools are offered to turns beside the built-in ones. */
  mcpServers: Record<string, McpServerConfig>;
  /** Who may talk to the bot on the chat platforms (access.ts). */
  access: AccessConfig;
  /** Messages a minute and tokens a day per chat user and conversation (usage-limits.ts). */
  limits: LimitsConfig;
  /** Per-channel system prompt, model, MCP servers and reply style (channel-settings.ts). */
  channels: ChannelSettings[];
}

export function busyModeFor(config: Pick<CoreConfig, "busyModes" | "defaultBusyMode">, platform: string): BusyMode {
  return config.busyModes[platform] ?? config.defaultBusyMode;
}
