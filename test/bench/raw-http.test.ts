// The ingress benchmark's plain-socket HTTP client against a real node:http server on loopback:
// requests arrive whole, statuses come back in order per request, idle connections are reused
// (not past the server's keep-alive window),
// a response split over several packets is read whole, and one it cannot frame fails its request.
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { preparePost, RawHttpPool } from "../../bench/lib/raw-http.js";

interface Received {
  url: string;
  headers: IncomingMessage["headers"];
  body: string;
}

let server: Server | null = null;

async function listen(handler: (req: IncomingMessage, body: string, res: import("node:http").ServerResponse) => void): Promise<{ url: URL; received: Received[]; connections: () => number }> {
  const received: Received[] = [];
  let connections = 0;
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      received.push({ url: req.url ?? "", headers: req.headers, body });
      handler(req, body, res);
    });
  });
  server.on("connection", () => connections++);
  await new Promise<void>((resolve) => server?.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return { url: new URL(`http://127.0.0.1:${port}/hooks/a?x=1`), received, connections: () => connections };
}

afterEach(async () => {
  server?.closeAllConnections();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = null;
});

describe("RawHttpPool", () => {
  it("sends each prepared POST whole and resolves with its own status", async () => {
    const { url, received } = await listen((_req, body, res) => {
      const status = JSON.parse(body).status as number;
      res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify({ echoed: body.length }));
    });
    const pool = new RawHttpPool(url);
    const statuses = [202, 400, 401, 503, 202];
    const results = await Promise.all(
      statuses.map((status, i) => pool.send(preparePost(url, { "content-type": "application/json", "x-id": `d-${i}` }, JSON.stringify({ status, text: "héllo" })))),
    );
    pool.close();
    expect(results).toEqual(statuses);
    expect(received).toHaveLength(5);
    for (const request of received) {
      expect(request.url).toBe("/hooks/a?x=1");
      expect(request.headers["content-type"]).toBe("application/json");
      expect(request.headers.host).toBe(url.host);
      expect(JSON.parse(request.body).text).toBe("héllo");
    }
    expect(received.map((r) => r.headers["x-id"]).sort()).toEqual(["d-0", "d-1", "d-2", "d-3", "d-4"]);
  });

  it("reuses an idle connection instead of opening another", async () => {
    const { url, connections } = await listen((_req, _body, res) => res.writeHead(202, { "content-length": "0" }).end());
    const pool = new RawHttpPool(url);
    for (let i = 0; i < 20; i++) expect(await pool.send(preparePost(url, {}, `{"i":${i}}`))).toBe(202);
    pool.close();
    expect(connections()).toBe(1);
  });

  it("opens a new connection rather than reuse one idle for longer than the server may keep it", async () => {
    const { url, connections } = await listen((_req, _body, res) => res.writeHead(202, { "content-length": "0" }).end());
    const pool = new RawHttpPool(url, 100);
    expect(await pool.send(preparePost(url, {}, "{}"))).toBe(202);
    expect(await pool.send(preparePost(url, {}, "{}"))).toBe(202);
    expect(connections()).toBe(1);
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect(await pool.send(preparePost(url, {}, "{}"))).toBe(202);
    pool.close();
    expect(connections()).toBe(2);
  });

  it("reads a response whose head and body arrive apart", async () => {
    const { url } = await listen((_req, _body, res) => {
      res.writeHead(200, { "content-length": "11" });
      res.flushHeaders();
      res.write("hello ");
      setTimeout(() => res.end("world"), 30);
    });
    const pool = new RawHttpPool(url);
    expect(await pool.send(preparePost(url, {}, "{}"))).toBe(200);
    // The same connection then carries the next request: nothing of the first was left unread.
    expect(await pool.send(preparePost(url, {}, "{}"))).toBe(200);
    pool.close();
  });

  it("reads chunked responses, split anywhere, and then the next response on the same connection", async () => {
    let n = 0;
    const { url, connections } = await listen((_req, _body, res) => {
      n++;
      res.writeHead(201);
      res.write("first part, ");
      setTimeout(() => {
        res.write("second part, ");
        setTimeout(() => res.end(`last part ${n}`), 10);
      }, 10);
    });
    const pool = new RawHttpPool(url);
    expect(await pool.send(preparePost(url, {}, "{}"))).toBe(201);
    expect(await pool.send(preparePost(url, {}, "{}"))).toBe(201);
    pool.close();
    expect(connections()).toBe(1);
  });

  it("fails the request when it cannot tell where the response ends", async () => {
    const { url } = await listen((_req, _body, res) => {
      // HTTP/1.0-style: the body runs until the connection closes.
      res.socket?.end("HTTP/1.1 200 OK\r\nconnection: close\r\n\r\nuntil close");
    });
    const pool = new RawHttpPool(url);
    await expect(pool.send(preparePost(url, {}, "{}"))).rejects.toThrow(/neither Content-Length nor chunked/);
    pool.close();
  });
});
