// The access policy's config section: the YAML file's `access:` and the ACCESS_* variables
// (main/config.ts composes it with the other sections).
import { z } from "zod";
import { envValue, intFrom, listOf, type ConfigSection, type Env } from "../shared/config-section.js";
import { ACCESS_MODES, DEFAULT_ACCESS, SUBJECT_PATTERN, type AccessConfig } from "./access.js";

const subject = z.string().trim().regex(SUBJECT_PATTERN, "subjects look like telegram:12345, slack:U0123, slack:channel:C1, slack:team:T1, discord:guild:1, telegram:chat:-100");
const subjects = z.array(subject);
const subjectList = listOf(subject);

const schema = z.object({
  mode: z.enum(ACCESS_MODES).optional(),
  allow: subjects.optional(),
  deny: subjects.optional(),
  admins: subjects.optional(),
  pairing_code_ttl_s: intFrom(60, 30 * 24 * 3600).optional(),
  allow_bots: z.array(z.string().trim().regex(/^(slack|discord):\S+$/, "bots look like slack:B0123 or discord:1234")).optional(),
  max_bot_exchanges: intFrom(1, 1000).optional(),
}).strict();

export const accessConfigSection: ConfigSection<typeof schema, AccessConfig> = {
  schema,
  load(env: Env, file: z.output<typeof schema> | undefined): AccessConfig {
    return {
      mode: envValue(env, "ACCESS_MODE", z.enum(ACCESS_MODES)) ?? file?.mode ?? DEFAULT_ACCESS.mode,
      allow: envValue(env, "ACCESS_ALLOW", subjectList) ?? file?.allow ?? [],
      deny: envValue(env, "ACCESS_DENY", subjectList) ?? file?.deny ?? [],
      admins: envValue(env, "ACCESS_ADMINS", subjectList) ?? file?.admins ?? [],
      pairingCodeTtlSeconds: file?.pairing_code_ttl_s ?? DEFAULT_ACCESS.pairingCodeTtlSeconds,
      allowBots: file?.allow_bots ?? DEFAULT_ACCESS.allowBots,
      maxBotExchanges: file?.max_bot_exchanges ?? DEFAULT_ACCESS.maxBotExchanges,
    };
  },
};
