// Configuration: environment variables plus an optional YAML file, validated at start with
// errors that name the bad key. Environment wins over the file.
import { readFileSync } from "node:fs";
import { parse as parseYaml } from "yaml";
import { z } from "zod";
import { BUSY_MODES, type CoreConfig } from "../gateway/config.js";
import { DEFAULT_MEDIA_SETTINGS } from "../gateway/media.js";

const intFrom = (min: number, max?: number) => {
  const base = z.coerce.number().int().min(min);
  return max === undefined ? base : base.max(max);
};

/** Socket Mode's app-level token; the message never repeats the value. */
const slackAppToken = z.string().startsWith("xapp-", "must be an app-level token (xapp-...)");

const busyMode = z.enum(BUSY_MODES);

const webhookRoute = z.object({
  secret: z.string().min(1),
  style: z.enum(["github", "standard"]).default("github"),
  reply: z.enum(["sync", "callback"]).default("sync"),
  callback_url: z.string().url().optional(),
  sync_timeout_ms: intFrom(100).optional(),
}).refine((r) => r.reply !== "callback" || Boolean(r.callback_url), {
  message: "callback_url is required when reply is 'callback'",
  path: ["callback_url"],
});
export type WebhookRouteConfig = z.infer<typeof webhookRoute>;

/** The file's shape (snake_case keys). Every key is optional. */
const fileSchema = z.object({
  host: z.string().optional(),
  port: intFrom(0, 65535).optional(),
  db: z.string().optional(),
  data_dir: z.string().optional(),
  api_key: z.string().optional(),
  redis_url: z.string().optional(),
  worker_concurrency: intFrom(1, 1024).optional(),
  queue_prefix: z.string().regex(/^[A-Za-z0-9_.-]+$/).optional(),
  llm: z.object({ base_url: z.string().url().optional(), api_key: z.string().optional(), model: z.string().optional() }).strict().optional(),
  echo_chunk_delay_ms: intFrom(0, 60_000).optional(),
  system_prompt: z.string().optional(),
  busy_modes: z.record(z.string(), busyMode).optional(),
  default_busy_mode: busyMode.optional(),
  collect_max_messages: intFrom(1, 1000).optional(),
  session_per_user: z.array(z.string()).optional(),
  body_limit_bytes: intFrom(1024).optional(),
  max_message_chars: intFrom(1).optional(),
  media: z.object({
    max_image_bytes: intFrom(1024).optional(),
    max_message_bytes: intFrom(1024).optional(),
    max_images_per_message: intFrom(1, 100).optional(),
    fetch_timeout_ms: intFrom(100).optional(),
    allow_http_loopback: z.boolean().optional(),
  }).strict().optional(),
  compaction: z.object({ max_chars: intFrom(0).optional(), keep_recent: intFrom(1).optional() }).strict().optional(),
  lease_ttl_seconds: intFrom(5).optional(),
  lease_wait_seconds: intFrom(1).optional(),
  shutdown_timeout_ms: intFrom(0).optional(),
  turn_reply_timeout_ms: intFrom(1000).optional(),
  log_level: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).optional(),
  webhooks: z.record(z.string().regex(/^[A-Za-z0-9_-]+$/, "route names are letters, digits, '-' and '_'"), webhookRoute).optional(),
  slack: z.object({ signing_secret: z.string().optional(), bot_token: z.string().optional(), app_token: slackAppToken.optional(), api_url: z.string().url().optional(), bot_user_id: z.string().optional() }).strict().optional(),
  discord: z.object({ bot_token: z.string().optional(), public_key: z.string().optional(), application_id: z.string().optional(), api_url: z.string().url().optional() }).strict().optional(),
  ws: z.object({ max_frame_bytes: intFrom(256).optional(), max_subscriptions: intFrom(1).optional(), heartbeat_ms: intFrom(100).optional() }).strict().optional(),
}).strict();

/** Everything a gateway process runs with: the core's settings and the edges' sections. */
export interface GatewayConfig extends CoreConfig {
  host: string;
  port: number;
  dataDir: string;
  dbPath: string;
  apiKey: string | null;
  redisUrl: string | null;
  logLevel: string;
  webhooks: Record<string, WebhookRouteConfig>;
  /** Events arrive over signed HTTP (signingSecret), Socket Mode (appToken), or both. */
  slack: { signingSecret: string | null; botToken: string; appToken: string | null; apiUrl: string; botUserId: string | null } | null;
  discord: { botToken: string | null; publicKey: string | null; applicationId: string | null; apiUrl: string } | null;
  ws: { maxFrameBytes: number; maxSubscriptions: number; heartbeatMs: number };
}

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ConfigError";
  }
}

function describeIssues(source: string, error: z.ZodError): string {
  return error.issues
    .map((issue) => `${source}: ${issue.path.length ? issue.path.join(".") : "(root)"}: ${issue.message}`)
    .join("; ");
}

function readFile(path: string): z.infer<typeof fileSchema> {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (err) {
    throw new ConfigError(`SWITCHBOARD_CONFIG: cannot read ${path}: ${(err as Error).message}`);
  }
  let raw: unknown;
  try {
    raw = parseYaml(text) ?? {};
  } catch (err) {
    throw new ConfigError(`SWITCHBOARD_CONFIG: ${path} is not valid YAML: ${(err as Error).message}`);
  }
  const parsed = fileSchema.safeParse(raw);
  if (!parsed.success) throw new ConfigError(describeIssues(path, parsed.error));
  return parsed.data;
}

/** Environment variables, each validated on its own so the error names the variable. */
function envValue<T>(env: NodeJS.ProcessEnv, name: string, schema: z.ZodType<T>): T | undefined {
  const raw = env[name];
  if (raw === undefined || raw === "") return undefined;
  const parsed = schema.safeParse(raw);
  if (!parsed.success) throw new ConfigError(`${name}: ${parsed.error.issues.map((i) => i.message).join("; ")}`);
  return parsed.data;
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env, overrides: Partial<GatewayConfig> = {}): GatewayConfig {
  const file = env.SWITCHBOARD_CONFIG ? readFile(env.SWITCHBOARD_CONFIG) : {};
  const str = z.string();
  const url = z.string().url();
  const dataDir = envValue(env, "SWITCHBOARD_DATA_DIR", str) ?? file.data_dir ?? "./data";
  const slackSecret = envValue(env, "SLACK_SIGNING_SECRET", str) ?? file.slack?.signing_secret;
  const slackToken = envValue(env, "SLACK_BOT_TOKEN", str) ?? file.slack?.bot_token;
  const slackApp = envValue(env, "SLACK_APP_TOKEN", slackAppToken) ?? file.slack?.app_token;
  checkSlackKeys(slackSecret, slackToken, slackApp);
  const discordToken = envValue(env, "DISCORD_BOT_TOKEN", str) ?? file.discord?.bot_token ?? null;
  const discordKey = envValue(env, "DISCORD_PUBLIC_KEY", z.string().regex(/^[0-9a-fA-F]{64}$/, "must be 64 hex characters")) ?? file.discord?.public_key ?? null;
  const config: GatewayConfig = {
    host: envValue(env, "HOST", str) ?? file.host ?? "127.0.0.1",
    port: envValue(env, "PORT", intFrom(0, 65535)) ?? file.port ?? 8080,
    dataDir,
    dbPath: envValue(env, "SWITCHBOARD_DB", str) ?? file.db ?? `${dataDir}/switchboard.db`,
    apiKey: envValue(env, "SWITCHBOARD_API_KEY", str) ?? file.api_key ?? null,
    redisUrl: envValue(env, "REDIS_URL", str) ?? file.redis_url ?? null,
    workerConcurrency: envValue(env, "WORKER_CONCURRENCY", intFrom(1, 1024)) ?? file.worker_concurrency ?? 16,
    queuePrefix: envValue(env, "SWITCHBOARD_QUEUE_PREFIX", z.string().regex(/^[A-Za-z0-9_.-]+$/, "letters, digits, '.', '-' and '_' only")) ?? file.queue_prefix ?? "switchboard",
    llm: {
      baseUrl: envValue(env, "LLM_BASE_URL", url) ?? file.llm?.base_url ?? null,
      apiKey: envValue(env, "LLM_API_KEY", str) ?? file.llm?.api_key ?? null,
      model: envValue(env, "LLM_MODEL", str) ?? file.llm?.model ?? null,
    },
    echoChunkDelayMs: envValue(env, "ECHO_CHUNK_DELAY_MS", intFrom(0, 60_000)) ?? file.echo_chunk_delay_ms ?? 0,
    systemPrompt: file.system_prompt ?? "You are a helpful assistant reached through a chat gateway.",
    busyModes: file.busy_modes ?? {},
    defaultBusyMode: envValue(env, "BUSY_MODE", busyMode) ?? file.default_busy_mode ?? "queue",
    collectMaxMessages: file.collect_max_messages ?? 20,
    sessionPerUser: file.session_per_user ?? [],
    bodyLimitBytes: envValue(env, "BODY_LIMIT_BYTES", intFrom(1024)) ?? file.body_limit_bytes ?? 1024 * 1024,
    maxMessageChars: file.max_message_chars ?? 100_000,
    media: {
      maxImageBytes: envValue(env, "MEDIA_MAX_IMAGE_BYTES", intFrom(1024)) ?? file.media?.max_image_bytes ?? DEFAULT_MEDIA_SETTINGS.maxImageBytes,
      maxMessageBytes: envValue(env, "MEDIA_MAX_MESSAGE_BYTES", intFrom(1024)) ?? file.media?.max_message_bytes ?? DEFAULT_MEDIA_SETTINGS.maxMessageBytes,
      maxImagesPerMessage: file.media?.max_images_per_message ?? DEFAULT_MEDIA_SETTINGS.maxImagesPerMessage,
      fetchTimeoutMs: file.media?.fetch_timeout_ms ?? DEFAULT_MEDIA_SETTINGS.fetchTimeoutMs,
      allowHttpLoopback: envValue(env, "MEDIA_ALLOW_HTTP_LOOPBACK", z.enum(["true", "false"]).transform((v) => v === "true")) ?? file.media?.allow_http_loopback ?? false,
    },
    compaction: compactionFrom(
      envValue(env, "COMPACTION_MAX_CHARS", intFrom(0)) ?? file.compaction?.max_chars ?? 200_000,
      envValue(env, "COMPACTION_KEEP_RECENT", intFrom(1)) ?? file.compaction?.keep_recent ?? 20,
    ),
    leaseTtlSeconds: envValue(env, "LEASE_TTL_SECONDS", intFrom(5)) ?? file.lease_ttl_seconds ?? 60,
    leaseWaitSeconds: envValue(env, "LEASE_WAIT_SECONDS", intFrom(1)) ?? file.lease_wait_seconds ?? 600,
    shutdownTimeoutMs: envValue(env, "SHUTDOWN_TIMEOUT_MS", intFrom(0)) ?? file.shutdown_timeout_ms ?? 10_000,
    turnReplyTimeoutMs: envValue(env, "TURN_REPLY_TIMEOUT_MS", intFrom(1000)) ?? file.turn_reply_timeout_ms ?? 120_000,
    logLevel: envValue(env, "LOG_LEVEL", z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"])) ?? file.log_level ?? "info",
    webhooks: file.webhooks ?? {},
    slack: slackToken
      ? {
          signingSecret: slackSecret || null,
          botToken: slackToken,
          appToken: slackApp || null,
          apiUrl: envValue(env, "SLACK_API_URL", url) ?? file.slack?.api_url ?? "https://slack.com/api/",
          botUserId: envValue(env, "SLACK_BOT_USER_ID", str) ?? file.slack?.bot_user_id ?? null,
        }
      : null,
    discord: discordToken || discordKey
      ? {
          botToken: discordToken,
          publicKey: discordKey,
          applicationId: envValue(env, "DISCORD_APPLICATION_ID", str) ?? file.discord?.application_id ?? null,
          apiUrl: envValue(env, "DISCORD_API_URL", url) ?? file.discord?.api_url ?? "https://discord.com/api/v10",
        }
      : null,
    ws: {
      maxFrameBytes: file.ws?.max_frame_bytes ?? 64 * 1024,
      maxSubscriptions: file.ws?.max_subscriptions ?? 100,
      heartbeatMs: file.ws?.heartbeat_ms ?? 30_000,
    },
    ...overrides,
  };
  if (!config.apiKey && !isLoopback(config.host)) {
    throw new ConfigError(`SWITCHBOARD_API_KEY: required when HOST is not a loopback address (HOST=${config.host})`);
  }
  return config;
}

/** Slack needs the bot token (replies) and a way for events to arrive: a signing secret, an app-level token, or both. */
function checkSlackKeys(secret: string | undefined, botToken: string | undefined, appToken: string | undefined): void {
  if (!botToken && (secret || appToken)) {
    throw new ConfigError("SLACK_BOT_TOKEN: required with SLACK_SIGNING_SECRET or SLACK_APP_TOKEN (replies are sent with it)");
  }
  if (botToken && !secret && !appToken) {
    throw new ConfigError("SLACK_BOT_TOKEN: also set SLACK_SIGNING_SECRET (Events API over HTTP) or SLACK_APP_TOKEN (Socket Mode), or neither");
  }
  if (botToken?.startsWith("xapp-")) {
    throw new ConfigError("SLACK_BOT_TOKEN: is an app-level token (xapp-...); it belongs in SLACK_APP_TOKEN, and the bot token (xoxb-...) here");
  }
}

/** 0 turns compaction off. */
function compactionFrom(maxChars: number, keepRecent: number): GatewayConfig["compaction"] {
  return maxChars > 0 ? { maxChars, keepRecent } : null;
}

export function isLoopback(host: string): boolean {
  return host === "localhost" || host === "::1" || host === "[::1]" || /^127\.\d+\.\d+\.\d+$/.test(host);
}

