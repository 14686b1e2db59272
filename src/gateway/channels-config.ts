// The per-channel settings' config section: the YAML file's `channels:` (main/config.ts composes it).
import { z } from "zod";
import type { ConfigSection, Env } from "../shared/config-section.js";
import { CHANNEL_MATCH, REPLY_STYLES, type ChannelSettings } from "./channel-settings.js";
import { BUSY_MODES } from "./config.js";

const entry = z.object({
  match: z.string().trim().regex(CHANNEL_MATCH, "match looks like slack, slack:team:T1, slack:channel:C1, discord:guild:1 or telegram:chat:-100"),
  system_prompt: z.string().min(1).optional(),
  model: z.string().min(1).optional(),
  mcp_servers: z.array(z.string()).optional(),
  reply_style: z.enum(REPLY_STYLES).optional(),
  busy_mode: z.enum(BUSY_MODES).optional(),
}).strict();
const schema = z.record(z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/, "names are letters, digits, '.', '-' and '_'"), entry);

export const channelsConfigSection: ConfigSection<typeof schema, ChannelSettings[]> = {
  schema,
  load(_env: Env, file: z.output<typeof schema> | undefined): ChannelSettings[] {
    return Object.entries(file ?? {}).map(([name, settings]) => ({
      name,
      match: settings.match,
      ...(settings.system_prompt ? { systemPrompt: settings.system_prompt } : {}),
      ...(settings.model ? { model: settings.model } : {}),
      ...(settings.mcp_servers ? { mcpServers: settings.mcp_servers } : {}),
      ...(settings.reply_style ? { replyStyle: settings.reply_style } : {}),
      ...(settings.busy_mode ? { busyMode: settings.busy_mode } : {}),
    }));
  },
};
