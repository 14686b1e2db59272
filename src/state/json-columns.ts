// JSON columns: stored as TEXT, parsed on read. A value that does not parse is surfaced as null
// rather than failing the whole read (a transcript must stay loadable).

export function toJson(value: unknown): string | null {
  return value === undefined || value === null ? null : JSON.stringify(value);
}

export function fromJson<T>(text: string | null): T | null {
  if (text === null) return null;
  try {
    return JSON.parse(text) as T;
  } catch {
    return null;
  }
}
