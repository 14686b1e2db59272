// The model client's fetch on undici's `request`: a streamed body is read as it arrives, an abort
// closes the connection at once, and a whole answer reads as text or JSON, with its headers.
import { createServer, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { createModelFetch } from "../../../src/agent/providers/model-fetch.js";

describe("the model client's fetch", () => {
  let server: Server | null = null;

  afterEach(async () => {
    server?.closeAllConnections();
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    server = null;
  });

  async function serve(handler: (res: ServerResponse, body: string, onClose: Promise<void>) => void): Promise<string> {
    server = createServer((req, res) => {
      let body = "";
      req.on("data", (chunk: Buffer) => (body += chunk.toString()));
      req.on("end", () => handler(res, body, new Promise((resolve) => res.on("close", () => resolve()))));
    });
    await new Promise<void>((resolve) => server?.listen(0, "127.0.0.1", resolve));
    return `http://127.0.0.1:${(server?.address() as AddressInfo).port}`;
  }

  it("hands over a streamed body chunk by chunk, before the answer ends", async () => {
    let sendRest: () => void = () => undefined;
    const url = await serve((res) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.write("data: one\n\n");
      sendRest = () => res.end("data: two\n\n");
    });
    const response = await createModelFetch()(`${url}/v1/chat/completions`, { method: "post", body: "{}", headers: { "content-type": "application/json" } });
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("text/event-stream");
    const chunks: string[] = [];
    for await (const chunk of response.body as unknown as AsyncIterable<Buffer>) {
      chunks.push(chunk.toString());
      // The first chunk came while the server still holds the rest back.
      if (chunks.length === 1) sendRest();
    }
    expect(chunks.join("")).toBe("data: one\n\ndata: two\n\n");
  });

  it("closes the connection when the caller aborts mid-stream", async () => {
    let closed: Promise<void> | null = null;
    const url = await serve((res, _body, onClose) => {
      closed = onClose;
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.write("data: one\n\n");
    });
    const controller = new AbortController();
    const response = await createModelFetch()(`${url}/v1/chat/completions`, { method: "POST", body: "{}", signal: controller.signal });
    const iterator = (response.body as unknown as AsyncIterable<Buffer>)[Symbol.asyncIterator]();
    expect((await iterator.next()).value?.toString()).toBe("data: one\n\n");
    controller.abort();
    await expect(iterator.next()).rejects.toThrow();
    await closed;
  });

  it("reads a whole answer as JSON or text, error statuses included, and sends the request as given", async () => {
    const url = await serve((res, body) => {
      res.writeHead(body.includes("fail") ? 429 : 200, { "content-type": "application/json", "retry-after": "2" });
      res.end(JSON.stringify({ echoed: body }));
    });
    const fetch = createModelFetch();
    const ok = await fetch(`${url}/v1/chat/completions`, { method: "POST", body: '{"a":1}' });
    expect(ok.ok).toBe(true);
    expect(await ok.json()).toEqual({ echoed: '{"a":1}' });
    const limited = await fetch(new URL(`${url}/v1/chat/completions`), { method: "POST", body: "fail" });
    expect(limited.ok).toBe(false);
    expect(limited.status).toBe(429);
    expect(limited.headers.get("retry-after")).toBe("2");
    expect(JSON.parse(await limited.text())).toEqual({ echoed: "fail" });
  });
});
