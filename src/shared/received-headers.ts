// Response headers as undici's `request` gives them (a plain object, repeated names as arrays),
// turned into the WHATWG Headers a fetch caller reads.

export function headersFromReceived(received: Record<string, string | string[] | undefined>): Headers {
  const headers = new Headers();
  for (const [name, value] of Object.entries(received)) {
    if (Array.isArray(value)) for (const v of value) headers.append(name, v);
    else if (value !== undefined) headers.append(name, value);
  }
  return headers;
}
