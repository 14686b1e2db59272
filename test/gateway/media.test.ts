// The media rules every path shares: images known by their bytes, the caps, downloads that stop
// at the cap or the time limit and carry credentials only to their own origin, and the URL check
// that keeps API clients off the gateway's own network.
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import { createServer as createTcpServer, type AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { downloadMedia } from "../../src/gateway/media-download.js";
import { publicImageUrlCheck } from "../../src/gateway/media-url-policy.js";
import { checkImage, checkMessageImages, MediaError, sniffImageType } from "../../src/gateway/media.js";

const PNG = Buffer.from("89504e470d0a1a0a0000000d", "hex");

async function rejection(promise: Promise<unknown> | (() => unknown)): Promise<MediaError> {
  try {
    await (typeof promise === "function" ? promise() : promise);
  } catch (err) {
    if (err instanceof MediaError) return err;
    throw err;
  }
  throw new Error("expected a MediaError");
}

describe("images by their bytes", () => {
  it("knows PNG, JPEG, GIF and WebP, and nothing else", () => {
    expect(sniffImageType(PNG)).toBe("image/png");
    expect(sniffImageType(Buffer.from("ffd8ffe0", "hex"))).toBe("image/jpeg");
    expect(sniffImageType(Buffer.from("GIF89a..."))).toBe("image/gif");
    expect(sniffImageType(Buffer.concat([Buffer.from("RIFF"), Buffer.alloc(4), Buffer.from("WEBPVP8 ")]))).toBe("image/webp");
    expect(sniffImageType(Buffer.from("<svg xmlns='http://www.w3.org/2000/svg'/>"))).toBeNull();
    expect(sniffImageType(Buffer.from("%PDF-1.7"))).toBeNull();
  });

  it("checks the per-image and per-message caps", async () => {
    expect(checkImage(PNG, { maxImageBytes: 100 }).content_type).toBe("image/png");
    expect((await rejection(() => checkImage(Buffer.concat([PNG, Buffer.alloc(200)]), { maxImageBytes: 100 }, "a.png"))).message).toBe(
      "image a.png is 212 B, more than the 100 B allowed per image",
    );
    expect((await rejection(() => checkImage(Buffer.from("text"), { maxImageBytes: 100 }))).code).toBe("unsupported_type");
    const limits = { maxMessageBytes: 20, maxImagesPerMessage: 2 };
    expect(() => checkMessageImages([{ data: PNG }], limits)).not.toThrow();
    expect((await rejection(() => checkMessageImages([{ data: PNG }, { data: PNG }], limits))).code).toBe("too_large");
    expect((await rejection(() => checkMessageImages([{ data: PNG }, { data: PNG }, { data: PNG }], { ...limits, maxMessageBytes: 1000 }))).message).toContain("at most 2");
  });
});

describe("downloadMedia", () => {
  let server: Server;
  let base: string;
  const seen: Array<{ path: string; headers: IncomingHttpHeaders }> = [];
  let otherOrigin: string;
  let other: Server;

  beforeAll(async () => {
    other = createServer((req, res) => {
      seen.push({ path: `other${req.url}`, headers: req.headers });
      res.writeHead(200, { "content-type": "image/png" });
      res.end(PNG);
    });
    await new Promise<void>((resolve) => other.listen(0, "127.0.0.1", resolve));
    otherOrigin = `http://localhost:${(other.address() as AddressInfo).port}`;
    server = createServer((req, res) => {
      seen.push({ path: req.url ?? "", headers: req.headers });
      switch (req.url) {
        case "/ok.png":
          res.writeHead(200, { "content-type": "image/png; charset=binary" });
          return res.end(PNG);
        case "/declared-big":
          res.writeHead(200, { "content-type": "image/png", "content-length": "5000" });
          return res.end(Buffer.alloc(5000));
        case "/streamed-big":
          res.writeHead(200, { "content-type": "image/png" });
          for (let i = 0; i < 10; i++) res.write(Buffer.alloc(1000));
          return res.end();
        case "/slow":
          res.writeHead(200, { "content-type": "image/png" });
          res.write(PNG);
          return; // never ends
        case "/same-origin-redirect":
          res.writeHead(302, { location: "/ok.png" });
          return res.end();
        case "/away":
          res.writeHead(302, { location: `${otherOrigin}/x.png` });
          return res.end();
        default:
          res.writeHead(404);
          return res.end();
      }
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    server.closeAllConnections();
    other.closeAllConnections();
    await Promise.all([new Promise((r) => server.close(r)), new Promise((r) => other.close(r))]);
  });

  const options = { maxBytes: 4096, timeoutMs: 2000 };

  it("returns the bytes and the content type, following a redirect with its credentials on the same origin", async () => {
    const got = await downloadMedia(`${base}/same-origin-redirect`, { ...options, headers: { authorization: "Bearer secret" } });
    expect(got.data.equals(PNG)).toBe(true);
    expect(got.contentType).toBe("image/png");
    expect(seen.filter((s) => s.path === "/ok.png").at(-1)?.headers.authorization).toBe("Bearer secret");
  });

  it("does not carry credentials to another origin, and checks every hop", async () => {
    await downloadMedia(`${base}/away`, { ...options, headers: { authorization: "Bearer secret" } });
    expect(seen.filter((s) => s.path === "other/x.png").at(-1)?.headers.authorization).toBeUndefined();
    const checked: string[] = [];
    const blocked = await rejection(
      downloadMedia(`${base}/away`, {
        ...options,
        checkUrl: (url) => {
          checked.push(url.origin);
          if (url.hostname === "localhost") throw new MediaError("blocked_url", "not there");
        },
      }),
    );
    expect(blocked.code).toBe("blocked_url");
    expect(checked).toEqual([base, otherOrigin]);
  });

  it("stops at the cap, declared or streamed, at the time limit, and on an error status", async () => {
    expect((await rejection(downloadMedia(`${base}/declared-big`, options))).code).toBe("too_large");
    expect((await rejection(downloadMedia(`${base}/streamed-big`, options))).code).toBe("too_large");
    const started = Date.now();
    const slow = await rejection(downloadMedia(`${base}/slow`, { maxBytes: 4096, timeoutMs: 300 }));
    expect(slow.code).toBe("fetch_failed");
    expect(slow.message).toContain("300 ms");
    // The time limit is the behaviour: it fired, with a bound 10x the 300 ms.
    expect(Date.now() - started).toBeLessThan(3_000);
    const missing = await rejection(downloadMedia(`${base}/nope`, options));
    expect(missing.message).toContain("404");
  });
});

describe("the API's image URL check", () => {
  const publicResolver = async (): Promise<string[]> => ["93.184.215.14"];
  const privateResolver = async (): Promise<string[]> => ["93.184.215.14", "192.168.1.20"];

  it("by default takes only https URLs of public hosts", async () => {
    const check = publicImageUrlCheck({ allowHttpLoopback: false, resolve: publicResolver });
    await expect(check(new URL("https://images.example.com/cat.png"))).resolves.toEqual({ addresses: ["93.184.215.14"] });
    expect((await rejection(check(new URL("http://images.example.com/cat.png")))).code).toBe("blocked_url");
    expect((await rejection(check(new URL("http://127.0.0.1:8080/cat.png")))).code).toBe("blocked_url");
    expect((await rejection(check(new URL("https://127.0.0.1/cat.png")))).message).toContain("not a public address");
    expect((await rejection(check(new URL("https://[::1]/cat.png")))).code).toBe("blocked_url");
    expect((await rejection(check(new URL("https://[::ffff:127.0.0.1]/cat.png")))).code).toBe("blocked_url");
    expect((await rejection(check(new URL("https://169.254.169.254/latest")))).code).toBe("blocked_url");
    const rebinding = publicImageUrlCheck({ allowHttpLoopback: false, resolve: privateResolver });
    expect((await rejection(rebinding(new URL("https://sneaky.example.com/cat.png")))).code).toBe("blocked_url");
  });

  it.each([
    ["NAT64, well-known prefix", "64:ff9b::7f00:1"],
    ["NAT64, local use", "64:ff9b:1::a00:1"],
    ["6to4", "2002:7f00:1::1"],
    ["Teredo", "2001:0:4136:e378:8000:63bf:3fff:fdd2"],
    ["IPv4-compatible", "::7f00:1"],
    ["SIIT", "::ffff:0:7f00:1"],
  ])("refuses an IPv6 address that embeds an IPv4 one (%s), as a literal and resolved", async (_form, address) => {
    const check = publicImageUrlCheck({ allowHttpLoopback: false, resolve: async () => [address] });
    expect((await rejection(check(new URL(`https://[${address}]/cat.png`)))).message).toContain("not a public address");
    expect((await rejection(check(new URL("https://embedded.example.com/cat.png")))).code).toBe("blocked_url");
  });

  it("takes public IPv6 and IPv4-mapped public addresses", async () => {
    const check = publicImageUrlCheck({ allowHttpLoopback: false, resolve: publicResolver });
    await expect(check(new URL("https://[2606:4700::1111]/cat.png"))).resolves.toEqual({ addresses: [] });
    await expect(check(new URL("https://[::ffff:93.184.215.14]/cat.png"))).resolves.toEqual({ addresses: [] });
  });

  it("connects to the address it checked: a second lookup's loopback answer (DNS rebinding) is never asked for", async () => {
    // The loopback service a rebinding host would point at: it counts every connection.
    let connections = 0;
    const target = createTcpServer((socket) => {
      connections++;
      socket.destroy();
    });
    await new Promise<void>((resolve) => target.listen(0, "127.0.0.1", resolve));
    const port = (target.address() as AddressInfo).port;
    // Public (a documentation address, which goes nowhere) on the first lookup, loopback after.
    const lookups: string[] = [];
    const rebinding = async (host: string): Promise<string[]> => {
      lookups.push(host);
      return lookups.length === 1 ? ["203.0.113.10"] : ["127.0.0.1"];
    };
    try {
      const failed = await rejection(
        downloadMedia(`https://localhost:${port}/cat.png`, {
          maxBytes: 4096,
          timeoutMs: 1500,
          checkUrl: publicImageUrlCheck({ allowHttpLoopback: false, resolve: rebinding }),
        }),
      );
      expect(failed.code).toBe("fetch_failed");
      expect(lookups).toEqual(["localhost"]);
      expect(connections).toBe(0);
    } finally {
      await new Promise<void>((resolve) => target.close(() => resolve()));
    }
  });

  it("with the test setting, also loopback over http, and nothing else more", async () => {
    const check = publicImageUrlCheck({ allowHttpLoopback: true, resolve: publicResolver });
    await expect(check(new URL("http://127.0.0.1:8080/cat.png"))).resolves.toEqual({ addresses: [] });
    expect((await rejection(check(new URL("http://images.example.com/cat.png")))).code).toBe("blocked_url");
    expect((await rejection(check(new URL("https://10.1.2.3/cat.png")))).code).toBe("blocked_url");
  });
});
