// `switchboard migrate-store --from sqlite:<path> --to postgres://…[?schema=…] [--to-schema <name>]`:
// the command line of the SQLite -> PostgreSQL copy (the copy itself is state/migrate-store.ts).
import { isPostgresUrl } from "../state/open-store.js";
import { DEFAULT_SCHEMA, describeDatabase } from "../state/postgres/connection.js";
import { migrateSqliteToPostgres, MigrateStoreError } from "../state/migrate-store.js";

export const MIGRATE_STORE_USAGE = `switchboard migrate-store --from sqlite:<path> --to postgres://…[?schema=<name>] [--to-schema <name>]
  Copies an SQLite store into a new or empty PostgreSQL schema (default: DATABASE_SCHEMA, else "${DEFAULT_SCHEMA}").
  Stop every gateway and worker using the SQLite file first.`;

interface MigrateStoreArgs {
  sqlitePath: string;
  connectionString: string;
  schema: string;
}

class UsageError extends Error {}

/** `?schema=` is ours, not a connection parameter: taken out of the URL before pg sees it. */
function splitSchemaParameter(url: string): { connectionString: string; schema: string | null } {
  const queryAt = url.indexOf("?");
  if (queryAt < 0) return { connectionString: url, schema: null };
  const query = new URLSearchParams(url.slice(queryAt + 1));
  const schema = query.get("schema");
  query.delete("schema");
  const rest = query.toString();
  return { connectionString: url.slice(0, queryAt) + (rest ? `?${rest}` : ""), schema };
}

export function parseMigrateStoreArgs(flags: string[], env: NodeJS.ProcessEnv): MigrateStoreArgs {
  const values = new Map<string, string>();
  for (let i = 0; i < flags.length; i++) {
    const flag = flags[i];
    const [name, inline] = flag.includes("=") ? [flag.slice(0, flag.indexOf("=")), flag.slice(flag.indexOf("=") + 1)] : [flag, undefined];
    if (!["--from", "--to", "--to-schema"].includes(name)) throw new UsageError(`unknown option: ${flag}`);
    const value = inline ?? flags[++i];
    if (value === undefined || value === "") throw new UsageError(`${name} needs a value`);
    values.set(name, value);
  }
  const from = values.get("--from");
  const to = values.get("--to");
  if (!from?.startsWith("sqlite:") || from.length === "sqlite:".length) throw new UsageError("--from must be sqlite:<path>");
  if (!to || !isPostgresUrl(to)) throw new UsageError("--to must be a postgres:// or postgresql:// URL");
  const { connectionString, schema: urlSchema } = splitSchemaParameter(to);
  const optionSchema = values.get("--to-schema");
  if (urlSchema && optionSchema && urlSchema !== optionSchema) throw new UsageError("--to names one schema and --to-schema another");
  return {
    sqlitePath: from.slice("sqlite:".length),
    connectionString,
    schema: optionSchema ?? urlSchema ?? env.DATABASE_SCHEMA ?? DEFAULT_SCHEMA,
  };
}

/** Runs the command; the exit code: 0 copied, 1 refused or failed, 2 bad usage. */
export async function runMigrateStore(flags: string[], env: NodeJS.ProcessEnv): Promise<number> {
  let args: MigrateStoreArgs;
  try {
    args = parseMigrateStoreArgs(flags, env);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    console.error(`${err.message}\n\n${MIGRATE_STORE_USAGE}`);
    return 2;
  }
  const target = describeDatabase(args.connectionString, args.schema);
  try {
    const counts = await migrateSqliteToPostgres(args);
    console.log(
      `copied sqlite:${args.sqlitePath} to ${target}: ${counts.sessions} sessions, ${counts.messages} messages, ` +
        `${counts.inbox} inbox rows, ${counts.deliveries} deliveries`,
    );
    return 0;
  } catch (err) {
    // Never the URL as given: it may carry a password.
    const refused = err instanceof MigrateStoreError ? "refused" : "failed";
    console.error(`migrate-store to ${target} ${refused}: ${(err as Error).message}; nothing was written`);
    return 1;
  }
}
