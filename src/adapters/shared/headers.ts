// Reading request headers without express: the plain routes get node's headers object as is.
import type { IncomingHttpHeaders } from "node:http";

/** A header's value as express's `req.get` reads it (node joins repeated custom headers). */
export function headerValue(headers: IncomingHttpHeaders, name: string): string | undefined {
  const value = headers[name.toLowerCase()];
  return typeof value === "string" ? value : undefined;
}
