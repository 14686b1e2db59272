// PostgreSQL connection strings as pg reads them, including the unix-socket form that is no WHATWG URL.
import { describe, expect, it } from "vitest";
import { formatConnectionUrl, parseConnectionUrl } from "../../src/state/postgres/connection-url.js";
import { describeDatabase } from "../../src/state/postgres/describe.js";

describe("PostgreSQL connection URLs", () => {
  it("read a socket folder given after a host-less user@/ (no WHATWG URL) and write it back as a valid URL", () => {
    const given = "postgresql://postgres@/postgres?host=%2Ftmp%2Fpg-abc&options=-c%20synchronous_commit%3Doff";
    expect(() => new URL(given)).toThrow(TypeError);
    const parts = parseConnectionUrl(given);
    expect(parts).toMatchObject({ user: "postgres", password: "", host: "/tmp/pg-abc", port: "", database: "postgres" });
    expect(parts.params.get("options")).toBe("-c synchronous_commit=off");
    const written = formatConnectionUrl(parts);
    expect(new URL(written).searchParams.get("host")).toBe("/tmp/pg-abc");
    expect(parseConnectionUrl(written)).toEqual(parts);
    expect(describeDatabase(given, "s")).toBe("postgres:///tmp/pg-abc/postgres#s");
  });

  it("keep host, port, credentials and parameters of a TCP URL, and move to another address", () => {
    const parts = parseConnectionUrl("postgres://u:p%40ss@db.example.com:6543/app?application_name=x");
    expect(parts).toMatchObject({ user: "u", password: "p@ss", host: "db.example.com", port: "6543", database: "app" });
    const moved = parseConnectionUrl(formatConnectionUrl({ ...parts, host: "127.0.0.1", port: "7000" }));
    expect(moved).toEqual({ ...parts, host: "127.0.0.1", port: "7000" });
    expect(describeDatabase("postgres://u:secret@db.example.com:6543/app")).toBe("postgres://db.example.com:6543/app");
  });

  it("refuse a string that is no URL without repeating it", () => {
    expect(() => parseConnectionUrl("not a url secret")).toThrow(/^not a valid PostgreSQL connection URL$/);
  });
});
