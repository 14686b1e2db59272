// PostgreSQL connection strings read the way node-postgres reads them. A unix-socket URL names no
// host before its path (postgres://user@/db?host=/run/postgresql): valid for pg, but not a WHATWG
// URL (credentials without a host), so `new URL` alone throws on it. Like pg's own parser, a
// string that does not parse is read again with a placeholder host, which is then dropped.

const PLACEHOLDER_HOST = "placeholder.invalid";

export interface ConnectionUrl {
  user: string;
  password: string;
  /** A host name, or a socket folder (starts with '/'); "" when neither is given. */
  host: string;
  /** The port as written, "" for the default. */
  port: string;
  /** "" when the URL names none. */
  database: string;
  /** Every query parameter but user, password, host and port (pg reads those into the fields above). */
  params: URLSearchParams;
}

/** Throws a TypeError that does not repeat the string (it may carry a password). */
export function parseConnectionUrl(connectionString: string): ConnectionUrl {
  let url: URL;
  let hostless = false;
  try {
    url = new URL(connectionString);
  } catch {
    if (!URL.canParse(connectionString.replace("@/", `@${PLACEHOLDER_HOST}/`))) throw new TypeError("not a valid PostgreSQL connection URL");
    url = new URL(connectionString.replace("@/", `@${PLACEHOLDER_HOST}/`));
    hostless = true;
  }
  const params = new URLSearchParams(url.searchParams);
  // As pg: a parameter wins over the URL's own part.
  const take = (name: string, fallback: string): string => {
    const value = params.get(name);
    params.delete(name);
    return value || fallback;
  };
  const hostname = hostless ? "" : decodeURIComponent(url.hostname.replace(/^\[(.+)\]$/, "$1"));
  return {
    user: take("user", decodeURIComponent(url.username)),
    password: take("password", decodeURIComponent(url.password)),
    host: take("host", hostname),
    port: take("port", url.port),
    database: decodeURIComponent(url.pathname.replace(/^\//, "")),
    params,
  };
}

/**
 * A connection string for `parts` that is also a valid WHATWG URL: a socket folder goes in the
 * `host` parameter, and without a host name the user, password and port go in parameters too
 * (a URL's credentials and port need a host before the path).
 */
export function formatConnectionUrl(parts: ConnectionUrl): string {
  const socket = parts.host.startsWith("/");
  const hostless = socket || parts.host === "";
  const url = new URL(`postgresql://${hostless ? "" : PLACEHOLDER_HOST}/`);
  const params = new URLSearchParams(parts.params);
  if (hostless) {
    if (socket) params.set("host", parts.host);
    if (parts.user) params.set("user", parts.user);
    if (parts.password) params.set("password", parts.password);
  } else {
    url.hostname = parts.host.includes(":") ? `[${parts.host}]` : parts.host;
    url.username = encodeURIComponent(parts.user);
    url.password = encodeURIComponent(parts.password);
  }
  if (parts.port) {
    if (hostless) params.set("port", parts.port);
    else url.port = parts.port;
  }
  url.pathname = `/${encodeURIComponent(parts.database)}`;
  url.search = params.toString();
  return url.toString();
}
