// A PostgreSQL URL as the logs show it, without the pg client: naming the store costs no import.
import { parseConnectionUrl } from "./connection-url.js";

/** postgres://host:port/database#schema, without user or password: for logs and to tell stores apart. */
export function describeDatabase(connectionString: string, schema?: string): string {
  const suffix = schema === undefined ? "" : `#${schema}`;
  try {
    const { host, port, database } = parseConnectionUrl(connectionString);
    return `postgres://${host || "localhost"}${port ? `:${port}` : ""}/${database}${suffix}`;
  } catch {
    return `postgres${suffix}`;
  }
}
