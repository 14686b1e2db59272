// WhatsApp (Cloud API) settings: their environment names, the YAML file's `whatsapp:` section,
// defaults and validation, in one place. All four credentials turn it on together; any one of
// them alone is a configuration error that names what is missing.
import { z } from "zod";
import { ConfigError, type ConfigSection, type Env } from "../../shared/config-section.js";

export interface WhatsAppConfig {
  /** WHATSAPP_ACCESS_TOKEN: a system user's (or the test) access token; sends replies. */
  accessToken: string;
  /** WHATSAPP_APP_SECRET: the Meta app's secret; verifies X-Hub-Signature-256 on webhooks. */
  appSecret: string;
  /** WHATSAPP_VERIFY_TOKEN: any string, also typed into the app's webhook settings (the GET handshake). */
  verifyToken: string;
  /** WHATSAPP_PHONE_NUMBER_ID: the business number's id (not the number itself); replies go from it. */
  phoneNumberId: string;
  /** WHATSAPP_API_URL: the Graph API base with its version. */
  apiUrl: string;
}

export const DEFAULT_WHATSAPP_API_URL = "https://graph.facebook.com/v21.0";

/** The environment variable (and file key) of each setting. */
export const WHATSAPP_SETTINGS = {
  accessToken: { env: "WHATSAPP_ACCESS_TOKEN", file: "access_token" },
  appSecret: { env: "WHATSAPP_APP_SECRET", file: "app_secret" },
  verifyToken: { env: "WHATSAPP_VERIFY_TOKEN", file: "verify_token" },
  phoneNumberId: { env: "WHATSAPP_PHONE_NUMBER_ID", file: "phone_number_id" },
  apiUrl: { env: "WHATSAPP_API_URL", file: "api_url" },
} as const;

type Setting = keyof typeof WHATSAPP_SETTINGS;
const REQUIRED: Setting[] = ["accessToken", "appSecret", "verifyToken", "phoneNumberId"];

/** Each value's rule; the messages never repeat the value (most of them are secrets). */
const RULES: Record<Setting, z.ZodType<string>> = {
  accessToken: z.string().min(1),
  appSecret: z.string().min(1),
  verifyToken: z.string().min(1),
  phoneNumberId: z
    .string()
    .regex(/^\d{1,32}$/, "must be the numeric phone number ID from the app's WhatsApp API Setup page (not the phone number)"),
  apiUrl: z.url({ protocol: /^https?$/, error: "must be an http(s) URL" }),
};

/** The YAML file's `whatsapp:` section; the environment wins over it. */
export const WhatsAppFileSchema = z
  .object({
    access_token: z.string().optional(),
    app_secret: z.string().optional(),
    verify_token: z.string().optional(),
    phone_number_id: z.union([z.string(), z.number().int().nonnegative()]).transform(String).optional(),
    api_url: z.string().optional(),
  })
  .strict();
export type WhatsAppFileSection = z.infer<typeof WhatsAppFileSchema>;

/**
 * WhatsApp's settings from the environment and the file section; null when none of the four
 * credentials is set. Throws ConfigError naming the missing or malformed setting.
 */
export function whatsappConfigFrom(
  env: Env,
  file: WhatsAppFileSection = {},
): WhatsAppConfig | null {
  const raw = (setting: Setting): string | undefined => {
    const { env: name, file: key } = WHATSAPP_SETTINGS[setting];
    const fromEnv = env[name];
    return fromEnv !== undefined && fromEnv !== "" ? fromEnv : file[key] || undefined;
  };
  const present = REQUIRED.filter((setting) => raw(setting) !== undefined);
  if (present.length === 0) return null;
  const missing = REQUIRED.filter((setting) => raw(setting) === undefined);
  if (missing.length > 0) {
    const names = (settings: Setting[]) => settings.map((s) => WHATSAPP_SETTINGS[s].env).join(", ");
    throw new ConfigError(
      `${names(missing)}: required with ${names(present)} (all four of ${names(REQUIRED)} turn WhatsApp on)`,
    );
  }
  const valid = (setting: Setting, value: string): string => {
    const parsed = RULES[setting].safeParse(value);
    if (parsed.success) return parsed.data;
    throw new ConfigError(`${WHATSAPP_SETTINGS[setting].env}: ${parsed.error.issues.map((i) => i.message).join("; ")}`);
  };
  const read = (setting: Setting): string => valid(setting, raw(setting) as string);
  return {
    accessToken: read("accessToken"),
    appSecret: read("appSecret"),
    verifyToken: read("verifyToken"),
    phoneNumberId: read("phoneNumberId"),
    apiUrl: valid("apiUrl", raw("apiUrl") ?? DEFAULT_WHATSAPP_API_URL).replace(/\/+$/, ""),
  };
}

/** YAML `whatsapp:` and the WHATSAPP_* variables; null: WhatsApp off. */
export const whatsappConfigSection: ConfigSection<typeof WhatsAppFileSchema, WhatsAppConfig | null> = {
  schema: WhatsAppFileSchema,
  load: (env, file) => whatsappConfigFrom(env, file),
};
