// Gives the test run one Redis and one PostgreSQL: REDIS_URL when set, else a private
// redis-server; TEST_DATABASE_URL or DATABASE_URL when set, else a private PostgreSQL (initdb +
// pg_ctl) — both started and stopped by this run. Tests that stop and restart Redis start their
// own (see support/redis.ts).
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startEmbeddedRedis, type EmbeddedRedis } from "../../src/bus/embedded-redis.js";
import { checkPostgres, dropRunSchemas, startPrivatePostgres, type PrivatePostgres } from "./postgres.js";
import { deletePrefix, newRedisClient, runKeyPrefix } from "./redis.js";

let embedded: EmbeddedRedis | null = null;
let folder: string | null = null;
let postgres: PrivatePostgres | null = null;
let postgresFolder: string | null = null;
/** Set once the run's PostgreSQL answered: only then does the teardown drop this run's schemas on it. */
let sharedPostgresUrl: string | null = null;

async function setupRedis(): Promise<void> {
  if (process.env.REDIS_URL) return;
  folder = mkdtempSync(join(tmpdir(), "switchboard-test-redis-"));
  embedded = await startEmbeddedRedis(folder);
  process.env.REDIS_URL = embedded.url;
  markPrivate("redis");
}

async function setupPostgres(): Promise<void> {
  const given = process.env.TEST_DATABASE_URL ? "TEST_DATABASE_URL" : process.env.DATABASE_URL ? "DATABASE_URL" : null;
  let url: string;
  if (given) {
    url = withoutCommitWaits(process.env[given] as string);
    await checkPostgres(url, given);
    sharedPostgresUrl = url;
  } else {
    postgresFolder = mkdtempSync(join(tmpdir(), "sbtest-pg-"));
    postgres = await startPrivatePostgres(postgresFolder);
    url = postgres.url;
    markPrivate("postgres");
  }
  // Tests reach PostgreSQL through TEST_DATABASE_URL only, each in its own schema: a gateway a test
  // starts uses SQLite unless that test hands it a database of its own.
  process.env.TEST_DATABASE_URL = url;
  delete process.env.DATABASE_URL;
  delete process.env.DATABASE_SCHEMA;
}

/**
 * Tests do not wait for each commit to reach the disk (synchronous_commit=off, a setting of the
 * test's own connections only): what a test can observe is the same, and a shared server's fsync
 * would dominate the run. A URL that already passes `options` is left as given.
 */
function withoutCommitWaits(url: string): string {
  if (/[?&]options=/.test(url)) return url;
  return `${url}${url.includes("?") ? "&" : "?"}options=${encodeURIComponent("-c synchronous_commit=off")}`;
}

/**
 * Names the servers this run started itself, for the test that proves a run with nothing set
 * used them (test/support/private-services.test.ts).
 */
function markPrivate(service: "redis" | "postgres"): void {
  const started = new Set((process.env.SWITCHBOARD_TEST_PRIVATE_SERVICES ?? "").split(",").filter(Boolean));
  started.add(service);
  process.env.SWITCHBOARD_TEST_PRIVATE_SERVICES = [...started].join(",");
}

export async function setup(): Promise<void> {
  delete process.env.SWITCHBOARD_TEST_PRIVATE_SERVICES;
  // Test processes and the gateways they spawn inherit it: every key and schema of the run shares a prefix.
  process.env.SWITCHBOARD_TEST_RUN = randomUUID().slice(0, 8);
  await setupRedis();
  try {
    await setupPostgres();
  } catch (err) {
    await teardown();
    throw err;
  }
}

export async function teardown(): Promise<void> {
  // On a shared Redis the run leaves nothing behind (queue metadata, event streams); keys of
  // other runs are never touched. A private server goes away with its keys.
  if (!embedded && process.env.REDIS_URL) {
    const client = newRedisClient(process.env.REDIS_URL);
    try {
      await deletePrefix(client, runKeyPrefix());
    } finally {
      client.disconnect();
    }
  }
  if (embedded) {
    await embedded.stop();
    delete process.env.REDIS_URL;
  }
  embedded = null;
  if (folder) rmSync(folder, { recursive: true, force: true });
  folder = null;

  // Likewise on a shared PostgreSQL: only this run's schemas are dropped.
  if (sharedPostgresUrl) await dropRunSchemas(sharedPostgresUrl);
  sharedPostgresUrl = null;
  await postgres?.stop();
  postgres = null;
  if (postgresFolder) rmSync(postgresFolder, { recursive: true, force: true });
  postgresFolder = null;
}
