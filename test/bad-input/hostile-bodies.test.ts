// Bodies built to hold the HTTP thread: millions of nested brackets (gzip-inflated through the
// express route, or plain) and a body that is all text up to the image
// room. Each is refused before it is parsed, and /health keeps answering while it is in flight.
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestGateway, type TestGateway } from "../support/gateway.js";
import { rawRequest, type RawResponse } from "./raw-http.js";

const API_KEY = "sb-hostile-bodies-key";
const DEPTH = 5_000_000;
let gw: TestGateway;
let base: string;

beforeAll(async () => {
  gw = await startTestGateway({ workers: false, env: { SWITCHBOARD_API_KEY: API_KEY } });
  base = gw.gateway.url ?? "";
}, 30_000);

afterAll(async () => {
  await gw?.stop();
});

/** `{"messages":[[[[...]]]]}`: DEPTH brackets deep, a few KB once gzipped. */
function nestedBrackets(): Buffer {
  return Buffer.from(`{"messages":${"[".repeat(DEPTH)}${"]".repeat(DEPTH)}}`);
}

function post(body: Buffer, headers: Record<string, string> = {}): Promise<RawResponse> {
  return rawRequest(base, {
    method: "POST",
    path: "/v1/chat/completions",
    headers: { authorization: `Bearer ${API_KEY}`, "content-type": "application/json", ...headers },
    body,
  });
}

/** GET /health one after another until `done` settles; the slowest answer's milliseconds. */
async function slowestHealthWhile(done: Promise<unknown>): Promise<number> {
  let settled = false;
  void done.finally(() => (settled = true));
  let slowest = 0;
  do {
    const started = performance.now();
    const health = await rawRequest(base, { method: "GET", path: "/health" });
    expect(health.status).toBe(200);
    slowest = Math.max(slowest, performance.now() - started);
  } while (!settled);
  return slowest;
}

const codeOf = (res: RawResponse): unknown => (JSON.parse(res.body) as { error?: { code?: unknown } }).error?.code;

describe("hostile bodies on /v1/chat/completions", () => {
  it("refuses a gzip bomb of nested brackets unparsed, and /health answers meanwhile", async () => {
    const gzipped = gzipSync(nestedBrackets(), { level: 9 });
    expect(gzipped.length).toBeLessThan(64 * 1024);
    const hostile = post(gzipped, { "content-encoding": "gzip" });
    const slowest = await slowestHealthWhile(hostile);
    const res = await hostile;
    expect([res.status, codeOf(res)]).toEqual([400, "json_too_deep"]);
    // Generous: a parse of the whole body held /health for seconds.
    expect(slowest).toBeLessThan(1000);
  });

  it("refuses the same nesting sent plain", async () => {
    const res = await post(nestedBrackets());
    expect([res.status, codeOf(res)]).toEqual([400, "json_too_deep"]);
  });

  it("refuses text past the limit in the room left for images with 413 unparsed", async () => {
    const numbers = "1,".repeat(1024 * 1024);
    for (const headers of [{}, { "content-encoding": "gzip" }] as Array<Record<string, string>>) {
      const text = Buffer.from(`{"model":"m","messages":[{"role":"user","content":"hi"}],"padding":[${numbers}1]}`);
      const res = await post("content-encoding" in headers ? gzipSync(text) : text, headers);
      expect([res.status, codeOf(res)]).toEqual([413, "body_too_large"]);
    }
  });

  it("still takes nesting a request needs", async () => {
    const nested = `${"[".repeat(60)}${"]".repeat(60)}`;
    // No messages, so the answer comes without a turn: the body was parsed and checked.
    const res = await post(Buffer.from(JSON.stringify({ model: "m", messages: [], tools: JSON.parse(nested) as unknown })));
    expect([res.status, codeOf(res)]).toEqual([400, "invalid_body"]);
  });
});
