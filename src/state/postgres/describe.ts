// A PostgreSQL URL as the logs show it, without the pg client: naming the store costs no import.

/** postgres://host:port/database#schema, without user or password: for logs and to tell stores apart. */
export function describeDatabase(connectionString: string, schema?: string): string {
  const suffix = schema === undefined ? "" : `#${schema}`;
  try {
    // A unix-socket URL has no host before the path (postgres://user@/db?host=/run/postgresql).
    const url = new URL(connectionString.replace("@/", "@localhost/"));
    const host = url.searchParams.get("host") ?? url.host;
    return `postgres://${host}${url.pathname}${suffix}`;
  } catch {
    return `postgres${suffix}`;
  }
}
