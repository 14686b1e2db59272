// The usage limits' config section: the YAML file's `limits:` (main/config.ts composes it).
import { z } from "zod";
import { intFrom, type ConfigSection, type Env } from "../shared/config-section.js";
import { NO_LIMITS, type LimitPair, type LimitsConfig } from "./usage-limits.js";

const pair = z.object({ messages_per_minute: intFrom(0).optional(), tokens_per_day: intFrom(0).optional() }).strict();
const schema = z.object({ user: pair.optional(), conversation: pair.optional() }).strict();

function pairOf(file: z.output<typeof pair> | undefined, defaults: LimitPair): LimitPair {
  return { messagesPerMinute: file?.messages_per_minute ?? defaults.messagesPerMinute, tokensPerDay: file?.tokens_per_day ?? defaults.tokensPerDay };
}

export const limitsConfigSection: ConfigSection<typeof schema, LimitsConfig> = {
  schema,
  load(_env: Env, file: z.output<typeof schema> | undefined): LimitsConfig {
    return { user: pairOf(file?.user, NO_LIMITS.user), conversation: pairOf(file?.conversation, NO_LIMITS.conversation) };
  },
};
