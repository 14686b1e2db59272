// The PostgreSQL the run's PostgreSQL figures are measured against, found the way the tests find
// theirs: DATABASE_URL when set, else a private server (initdb + pg_ctl on a unix socket in a temp
// folder) started for the run and stopped after it. Every measurement gets a schema of its own;
// the run drops them all when it ends, so a shared server keeps nothing of it.
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { describeDatabase } from "../../src/state/postgres/connection.js";
import { checkPostgres, dropSchema, startPrivatePostgres } from "../../test/support/postgres.js";

export interface BenchPostgres {
  url: string;
  /** True when this run started the server. */
  private: boolean;
  /** "15.4 (DATABASE_URL postgres://127.0.0.1:5432/postgres)" or "15.4 (private server)". */
  description: string;
  /** A schema name for one measurement; dropped when the run ends. */
  schema(label: string): string;
  stop(): Promise<void>;
}

async function serverVersion(url: string): Promise<string> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<{ server_version: string }>("SHOW server_version")).rows[0]?.server_version ?? "unknown";
  } finally {
    await client.end();
  }
}

export async function benchPostgres(): Promise<BenchPostgres> {
  const given = process.env.DATABASE_URL;
  let url: string;
  let folder: string | null = null;
  let stopServer: () => Promise<void> = async () => undefined;
  if (given) {
    await checkPostgres(given, "DATABASE_URL");
    url = given;
  } else {
    folder = mkdtempSync(join(tmpdir(), "switchboard-bench-pg-"));
    try {
      const server = await startPrivatePostgres(folder);
      url = server.url;
      stopServer = () => server.stop();
    } catch (err) {
      rmSync(folder, { recursive: true, force: true });
      throw err;
    }
  }
  const version = await serverVersion(url);
  const schemas = new Set<string>();
  return {
    url,
    private: !given,
    description: `${version} (${given ? `DATABASE_URL ${describeDatabase(given)}` : "private server"})`,
    schema(label) {
      const name = `bench_${label.replace(/[^a-z0-9]/gi, "_").toLowerCase()}_${randomUUID().replace(/-/g, "").slice(0, 8)}`;
      schemas.add(name);
      return name;
    },
    async stop() {
      try {
        for (const schema of schemas) await dropSchema(url, schema);
      } finally {
        await stopServer();
        if (folder) rmSync(folder, { recursive: true, force: true });
      }
    },
  };
}

/** Environment that points a gateway of this run at one schema of the run's PostgreSQL. */
export function postgresEnv(postgres: BenchPostgres, label: string): Record<string, string> {
  return { DATABASE_URL: postgres.url, DATABASE_SCHEMA: postgres.schema(label) };
}
