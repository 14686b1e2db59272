// Configuration: environment variables plus an optional YAML file, validated at start with
// errors that name the bad key. Environment wins over the file. The core's settings are read
// here; each adapter's section (its YAML key, variables, defaults and checks) lives in the
// adapter's folder, and this loader composes them (shared/config-section.ts).
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { z } from "zod";
import { adapterConfigSections } from "../adapters/config-sections.js";
import { BUSY_MODES, type CoreConfig } from "../gateway/config.js";
import { mcpConfigSection } from "../agent/tools/mcp/config.js";
import {
  ConfigError,
  envValue,
  intFrom,
  listOf,
  loadSections,
  sectionSchemas,
  type Env,
  type SectionSettings,
} from "../shared/config-section.js";
import { DEFAULT_MEDIA_SETTINGS } from "../gateway/media.js";
import { DEFAULT_POOL_SIZE } from "../state/store-options.js";
import { accessConfigSection } from "../gateway/access-config.js";
import { limitsConfigSection } from "../gateway/limits-config.js";
import { channelsConfigSection } from "../gateway/channels-config.js";

export { ConfigError };

const busyMode = z.enum(BUSY_MODES);

/** Where `switchboard serve` runs its turn and delivery workers: a thread of their own, or the HTTP event loop. */
export const WORKERS_LAYOUTS = ["thread", "inline"] as const;
export type WorkersLayout = (typeof WORKERS_LAYOUTS)[number];
const workersLayout = z.enum(WORKERS_LAYOUTS);

/** A key this short can be guessed; refused when the gateway listens beyond loopback. */
export const MIN_API_KEY_CHARS = 16;
// Messages never repeat the value: a database URL carries its password.
const postgresUrl = z.string().regex(/^postgres(ql)?:\/\//i, "must be a postgres:// or postgresql:// URL");
const schemaName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,62}$/, "letters, digits and '_' only, at most 63, not starting with a digit");


/** `scheme://host[:port]`, kept canonical (lower case, default port dropped) as browsers send it. */
const origin = z.string().transform((value, ctx) => {
  const url = URL.canParse(value.trim()) ? new URL(value.trim()) : null;
  const isOrigin = url !== null && (url.protocol === "http:" || url.protocol === "https:") &&
    url.pathname === "/" && !url.search && !url.hash && !url.username && !url.password;
  if (isOrigin) return url.origin;
  ctx.addIssue({ code: "custom", message: `not an origin (scheme://host[:port]): ${value}` });
  return z.NEVER;
});

/** A host name a client may use, without a port: `gateway.example.com`, `10.0.0.5`, `[::1]`. */
const hostName = z
  .string()
  .transform((value) => value.trim().toLowerCase().replace(/\.$/, ""))
  .pipe(z.string().regex(/^([a-z0-9-]+(\.[a-z0-9-]+)*|\[[0-9a-f:.]+\])$/, "must be a host name without scheme or port"));

/** TRUST_PROXY: how many proxies stand in front; `true`/`false` are read as 1/0. */
const trustProxy = z.preprocess((value) => (value === "true" ? 1 : value === "false" ? 0 : value), intFrom(0, 32));

/** The file's shape (snake_case keys): the core's keys and every section's. Every key is optional. */
const fileSchema = z.object({
  host: z.string().optional(),
  port: intFrom(0, 65535).optional(),
  db: z.string().optional(),
  database_url: postgresUrl.optional(),
  database_schema: schemaName.optional(),
  database_pool_size: intFrom(1, 1000).optional(),
  data_dir: z.string().optional(),
  api_key: z.string().optional(),
  allowed_origins: z.array(origin).optional(),
  allowed_hosts: z.array(hostName).optional(),
  trust_proxy: intFrom(0, 32).optional(),
  redis_url: z.string().optional(),
  worker_concurrency: intFrom(1, 1024).optional(),
  workers_layout: workersLayout.optional(),
  queue_prefix: z.string().regex(/^[A-Za-z0-9_.-]+$/).optional(),
  llm: z.object({ base_url: z.string().url().optional(), api_key: z.string().optional(), model: z.string().optional() }).strict().optional(),
  echo_chunk_delay_ms: intFrom(0, 60_000).optional(),
  echo_tool_directives: z.boolean().optional(),
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
  turn_recovery_interval_ms: intFrom(100, 60_000).optional(),
  shutdown_timeout_ms: intFrom(0).optional(),
  turn_reply_timeout_ms: intFrom(1000).optional(),
  log_level: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).optional(),
  ...sectionSchemas(adapterConfigSections),
  ws: z.object({
    max_frame_bytes: intFrom(256).optional(),
    max_subscriptions: intFrom(1).optional(),
    heartbeat_ms: intFrom(100).optional(),
    max_connections: intFrom(1).optional(),
    max_connections_per_ip: intFrom(1).optional(),
  }).strict().optional(),
  mcp_servers: mcpConfigSection.schema.optional(),
  access: accessConfigSection.schema.optional(),
  limits: limitsConfigSection.schema.optional(),
  channels: channelsConfigSection.schema.optional(),
}).strict();

type AdapterSettings = SectionSettings<typeof adapterConfigSections>;

/** Everything a gateway process runs with: the core's settings and the edges' sections. */
export interface GatewayConfig extends CoreConfig, AdapterSettings {
  host: string;
  port: number;
  dataDir: string;
  /** The SQLite file; unused when `databaseUrl` is set. */
  dbPath: string;
  /** postgres://… : sessions, transcripts, leases, inbox and ledger live in PostgreSQL; null: SQLite at dbPath. */
  databaseUrl: string | null;
  /** The PostgreSQL schema holding the tables (created if missing). */
  databaseSchema: string;
  /** PostgreSQL connections per store (each thread with a store has its own; the leases' pool has half). */
  databasePoolSize: number;
  apiKey: string | null;
  /** Origins besides the gateway's own whose pages may use /ws and the API (canonical form). */
  allowedOrigins: string[];
  /** Host names a no-key gateway answers besides loopback ones. */
  allowedHosts: string[];
  /** Proxies in front whose `X-Forwarded-*` headers are believed (TRUST_PROXY); 0: none. */
  trustProxy: number;
  redisUrl: string | null;
  /** `serve` with workers: `thread` runs them in a worker thread (acks never wait behind turns), `inline` on the HTTP event loop. */
  workersLayout: WorkersLayout;
  logLevel: string;
  ws: { maxFrameBytes: number; maxSubscriptions: number; heartbeatMs: number; maxConnections: number; maxConnectionsPerIp: number };
}

function describeIssues(source: string, error: z.ZodError): string {
  return error.issues
    .map((issue) => `${source}: ${issue.path.length ? issue.path.join(".") : "(root)"}: ${issue.message}`)
    .join("; ");
}

/** The YAML parser, loaded (synchronously, as loading the config is) only when there is a file to read. */
function parseYaml(text: string): unknown {
  const yaml = createRequire(import.meta.url)("yaml") as typeof import("yaml");
  return yaml.parse(text);
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

export function loadConfig(env: Env = process.env, overrides: Partial<GatewayConfig> = {}): GatewayConfig {
  const file = env.SWITCHBOARD_CONFIG ? readFile(env.SWITCHBOARD_CONFIG) : {};
  const str = z.string();
  const url = z.string().url();
  const dataDir = envValue(env, "SWITCHBOARD_DATA_DIR", str) ?? file.data_dir ?? "./data";
  const adapters = loadSections(adapterConfigSections, env, file);
  const config: GatewayConfig = {
    host: envValue(env, "HOST", str) ?? file.host ?? "127.0.0.1",
    port: envValue(env, "PORT", intFrom(0, 65535)) ?? file.port ?? 8080,
    dataDir,
    dbPath: envValue(env, "SWITCHBOARD_DB", str) ?? file.db ?? `${dataDir}/switchboard.db`,
    databaseUrl: envValue(env, "DATABASE_URL", postgresUrl) ?? file.database_url ?? null,
    databaseSchema: envValue(env, "DATABASE_SCHEMA", schemaName) ?? file.database_schema ?? "switchboard",
    databasePoolSize: envValue(env, "DATABASE_POOL_SIZE", intFrom(1, 1000)) ?? file.database_pool_size ?? DEFAULT_POOL_SIZE,
    apiKey: envValue(env, "SWITCHBOARD_API_KEY", str) ?? file.api_key ?? null,
    allowedOrigins: envValue(env, "ALLOWED_ORIGINS", listOf(origin)) ?? file.allowed_origins ?? [],
    allowedHosts: envValue(env, "ALLOWED_HOSTS", listOf(hostName)) ?? file.allowed_hosts ?? [],
    trustProxy: envValue(env, "TRUST_PROXY", trustProxy) ?? file.trust_proxy ?? 0,
    redisUrl: envValue(env, "REDIS_URL", str) ?? file.redis_url ?? null,
    // A turn mostly waits (model, platform, Redis): too few slots leave the workers thread idle
    // while many conversations are busy.
    workerConcurrency: envValue(env, "WORKER_CONCURRENCY", intFrom(1, 1024)) ?? file.worker_concurrency ?? 64,
    workersLayout: envValue(env, "WORKERS_LAYOUT", workersLayout) ?? file.workers_layout ?? "thread",
    queuePrefix: envValue(env, "SWITCHBOARD_QUEUE_PREFIX", z.string().regex(/^[A-Za-z0-9_.-]+$/, "letters, digits, '.', '-' and '_' only")) ?? file.queue_prefix ?? "switchboard",
    llm: {
      baseUrl: envValue(env, "LLM_BASE_URL", url) ?? file.llm?.base_url ?? null,
      apiKey: envValue(env, "LLM_API_KEY", str) ?? file.llm?.api_key ?? null,
      model: envValue(env, "LLM_MODEL", str) ?? file.llm?.model ?? null,
    },
    echoChunkDelayMs: envValue(env, "ECHO_CHUNK_DELAY_MS", intFrom(0, 60_000)) ?? file.echo_chunk_delay_ms ?? 0,
    // Off: with it on, every chat user on every platform runs any tool with arguments of choice.
    echoToolDirectives: envValue(env, "ECHO_TOOL_DIRECTIVES", z.enum(["true", "false"]).transform((v) => v === "true")) ?? file.echo_tool_directives ?? false,
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
    turnRecoveryIntervalMs: envValue(env, "TURN_RECOVERY_INTERVAL_MS", intFrom(100, 60_000)) ?? file.turn_recovery_interval_ms ?? 1_000,
    shutdownTimeoutMs: envValue(env, "SHUTDOWN_TIMEOUT_MS", intFrom(0)) ?? file.shutdown_timeout_ms ?? 10_000,
    turnReplyTimeoutMs: envValue(env, "TURN_REPLY_TIMEOUT_MS", intFrom(1000)) ?? file.turn_reply_timeout_ms ?? 120_000,
    logLevel: envValue(env, "LOG_LEVEL", z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"])) ?? file.log_level ?? "info",
    ...adapters,
    mcpServers: mcpConfigSection.load(env, file.mcp_servers),
    access: accessConfigSection.load(env, file.access),
    limits: limitsConfigSection.load(env, file.limits),
    channels: channelsConfigSection.load(env, file.channels),
    ws: {
      maxFrameBytes: file.ws?.max_frame_bytes ?? 64 * 1024,
      maxSubscriptions: file.ws?.max_subscriptions ?? 100,
      heartbeatMs: file.ws?.heartbeat_ms ?? 30_000,
      maxConnections: file.ws?.max_connections ?? 10_000,
      maxConnectionsPerIp: file.ws?.max_connections_per_ip ?? 1_000,
    },
    ...overrides,
  };
  if (!config.apiKey && !isLoopback(config.host)) {
    throw new ConfigError(`SWITCHBOARD_API_KEY: required when HOST is not a loopback address (HOST=${config.host})`);
  }
  if (config.apiKey && config.apiKey.length < MIN_API_KEY_CHARS && !isLoopback(config.host)) {
    throw new ConfigError(`SWITCHBOARD_API_KEY: must be at least ${MIN_API_KEY_CHARS} characters when HOST is not a loopback address (HOST=${config.host})`);
  }
  return config;
}

/** 0 turns compaction off. */
function compactionFrom(maxChars: number, keepRecent: number): GatewayConfig["compaction"] {
  return maxChars > 0 ? { maxChars, keepRecent } : null;
}

export function isLoopback(host: string): boolean {
  return host === "localhost" || host === "::1" || host === "[::1]" || /^127\.\d+\.\d+\.\d+$/.test(host);
}

