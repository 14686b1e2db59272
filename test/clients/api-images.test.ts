// Images through the OpenAI-compatible API, end to end: the official `openai` client sends
// content parts to a real gateway whose model is a local fake OpenAI server that records the
// image parts it gets. An image reaches the model on its turn and on every later turn of the
// session; the caps answer 413 and record nothing; the transcript API links the stored images
// to a route behind the key. A second gateway runs the offline echo model, with the defaults.
import { randomUUID } from "node:crypto";
import { createServer, type Server } from "node:http";
import { createServer as createTcpServer, type AddressInfo, type Server as TcpServer, type Socket } from "node:net";
import { createServer as createTlsServer } from "node:tls";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { imageUrlsOfMessage, messagesOf, startFakeOpenAI, textOfMessage, type FakeOpenAI, type RecordedRequest } from "../support/fake-openai.js";
import { startTestGateway, type TestGateway } from "./support/gateway.js";

const API_KEY = "sb-img-key";
let fake: FakeOpenAI;
let gw: TestGateway;
let echoGw: TestGateway;
let client: OpenAI;
let images: Server;
let imagesUrl: string;

/** A PNG (by its signature) of `size` bytes, different for each `seed`. */
function png(size: number, seed = 1): Buffer {
  const bytes = Buffer.alloc(size, seed);
  Buffer.from("89504e470d0a1a0a", "hex").copy(bytes);
  return bytes;
}
const dataUrl = (bytes: Buffer, type = "image/png"): string => `data:${type};base64,${bytes.toString("base64")}`;
const marker = (): string => `m${randomUUID().slice(0, 8)}`;

beforeAll(async () => {
  fake = await startFakeOpenAI({ apiKey: "model-key" });
  // A local image host: /cat.png is an image, /page is HTML.
  images = createServer((req, res) => {
    if (req.url === "/cat.png") {
      const body = png(700, 7);
      res.writeHead(200, { "content-type": "image/png", "content-length": body.length });
      res.end(body);
    } else {
      res.writeHead(200, { "content-type": "text/html" });
      res.end("<html>not an image</html>");
    }
  });
  await new Promise<void>((resolve) => images.listen(0, "127.0.0.1", resolve));
  imagesUrl = `http://127.0.0.1:${(images.address() as AddressInfo).port}`;
  gw = await startTestGateway({
    label: "api-images",
    workers: true,
    env: {
      SWITCHBOARD_API_KEY: API_KEY,
      LLM_BASE_URL: fake.url,
      LLM_API_KEY: "model-key",
      LLM_MODEL: "fake-model",
      MEDIA_MAX_IMAGE_BYTES: "4096",
      MEDIA_MAX_MESSAGE_BYTES: "6144",
      MEDIA_ALLOW_HTTP_LOOPBACK: "true",
      BODY_LIMIT_BYTES: "65536",
    },
  });
  echoGw = await startTestGateway({ label: "api-images-echo", workers: true, env: { SWITCHBOARD_API_KEY: API_KEY } });
  client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: API_KEY, maxRetries: 0, timeout: 20_000 });
}, 60_000);

afterAll(async () => {
  await gw?.stop();
  await echoGw?.stop();
  await fake?.close();
  await new Promise<void>((resolve) => images?.close(() => resolve()));
});

function requestsMentioning(text: string): RecordedRequest[] {
  return fake.completionRequests().filter((r) => messagesOf(r).some((m) => m.role === "user" && textOfMessage(m).includes(text)));
}

interface ApiAnswer {
  choices: Array<{ message: { content: string } }>;
  error: { message: string; type: string; code: string };
}

async function post(base: string, body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; json: ApiAnswer }> {
  const res = await fetch(`${base}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${API_KEY}`, "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
  return { status: res.status, json: (await res.json()) as ApiAnswer };
}

async function inboxTotal(): Promise<number> {
  const counts = await gw.gateway.store.inboxCounts();
  return Object.values(counts).reduce((a, b) => a + b, 0);
}

describe("images through the API", () => {
  it("reaches the model as an image part on its turn and on the next one, and is linked from the transcript", async () => {
    const sessionId = `img-${marker()}`;
    const question = `what is this ${marker()}`;
    const picture = png(1229);
    const first = await client.chat.completions.create(
      {
        model: "fake-model",
        messages: [{ role: "user", content: [{ type: "text", text: question }, { type: "image_url", image_url: { url: dataUrl(picture) } }] }],
      },
      { headers: { "X-Session-Id": sessionId } },
    );
    // The fake answers as the echo model does: it saw the image.
    expect(first.choices[0].message.content).toBe(`Echo: ${question} [image: image/png, 1.2 KB]`);

    const followUp = `and now ${marker()}`;
    await client.chat.completions.create({ model: "fake-model", messages: [{ role: "user", content: followUp }] }, { headers: { "X-Session-Id": sessionId } });

    const [turn1] = requestsMentioning(question);
    const user1 = messagesOf(turn1).filter((m) => m.role === "user");
    expect(user1).toHaveLength(1);
    expect(textOfMessage(user1[0])).toBe(question);
    expect(imageUrlsOfMessage(user1[0])).toEqual([dataUrl(picture)]);
    // The next turn reloads the transcript: the earlier message still carries its image.
    const [turn2] = requestsMentioning(followUp);
    const user2 = messagesOf(turn2).filter((m) => m.role === "user");
    expect(user2.map(textOfMessage)).toEqual([question, followUp]);
    expect(imageUrlsOfMessage(user2[0])).toEqual([dataUrl(picture)]);
    expect(imageUrlsOfMessage(user2[1])).toEqual([]);

    const listing = await fetch(`${gw.url}/api/sessions/${sessionId}/messages`, { headers: { authorization: `Bearer ${API_KEY}` } });
    const { messages } = (await listing.json()) as { messages: Array<{ role: string; content: string; attachments?: Array<{ url: string; content_type: string; size_bytes: number }> }> };
    const withImage = messages.filter((m) => m.attachments);
    expect(withImage).toHaveLength(1);
    expect(withImage[0]).toMatchObject({ role: "user", content: question, attachments: [{ content_type: "image/png", size_bytes: 1229 }] });
    const link = withImage[0].attachments![0].url;
    expect(link).toMatch(new RegExp(`^/api/sessions/${sessionId}/attachments/\\d+$`));
    const served = await fetch(`${gw.url}${link}`, { headers: { authorization: `Bearer ${API_KEY}` } });
    expect(served.status).toBe(200);
    expect(served.headers.get("content-type")).toBe("image/png");
    expect(served.headers.get("x-content-type-options")).toBe("nosniff");
    expect(Buffer.from(await served.arrayBuffer()).equals(picture)).toBe(true);
    // Behind the key, and only through its own session.
    expect((await fetch(`${gw.url}${link}`)).status).toBe(401);
    const other = link.replace(`/sessions/${sessionId}/`, "/sessions/someone-else/");
    expect((await fetch(`${gw.url}${other}`, { headers: { authorization: `Bearer ${API_KEY}` } })).status).toBe(404);
  });

  it("fetches an image URL (loopback allowed here by the explicit setting) and refuses a page that is not an image", async () => {
    const question = `describe ${marker()}`;
    const ok = await post(gw.url, { model: "fake-model", messages: [{ role: "user", content: [{ type: "text", text: question }, { type: "image_url", image_url: { url: `${imagesUrl}/cat.png` } }] }] });
    expect(ok.status).toBe(200);
    expect(ok.json.choices[0].message.content).toBe(`Echo: ${question} [image: image/png, 700 B]`);
    // The model gets the bytes as a data URL, not the gateway's private URL.
    const [request] = requestsMentioning(question);
    expect(imageUrlsOfMessage(messagesOf(request).at(-1)!)).toEqual([dataUrl(png(700, 7))]);

    const before = await inboxTotal();
    const page = await post(gw.url, { model: "fake-model", messages: [{ role: "user", content: [{ type: "text", text: "x" }, { type: "image_url", image_url: { url: `${imagesUrl}/page` } }] }] });
    expect(page.status).toBe(400);
    expect(page.json.error).toMatchObject({ code: "invalid_image" });
    expect(page.json.error.message).toContain("text/html");
    expect(await inboxTotal()).toBe(before);
  });

  it("answers 413 past the per-image and per-message caps, 400 for bytes that are not an image, and records nothing", async () => {
    const before = await inboxTotal();
    const tooBig = await post(gw.url, { model: "fake-model", messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: dataUrl(png(5000)) } }] }] });
    expect(tooBig.status).toBe(413);
    expect(tooBig.json.error).toMatchObject({ type: "request_too_large", code: "image_too_large" });
    expect(tooBig.json.error.message).toContain("4.0 KB");

    const together = await post(gw.url, {
      model: "fake-model",
      messages: [{ role: "user", content: [{ type: "text", text: "two" }, { type: "image_url", image_url: { url: dataUrl(png(4000, 1)) } }, { type: "image_url", image_url: { url: dataUrl(png(4000, 2)) } }] }],
    });
    expect(together.status).toBe(413);
    expect(together.json.error).toMatchObject({ code: "image_too_large" });
    expect(together.json.error.message).toContain("per message");

    const notImage = await post(gw.url, { model: "fake-model", messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: dataUrl(Buffer.from("just some text")) } }] }] });
    expect(notImage.status).toBe(400);
    expect(notImage.json.error).toMatchObject({ code: "invalid_image" });

    const inAssistant = await post(gw.url, {
      model: "fake-model",
      messages: [{ role: "assistant", content: [{ type: "image_url", image_url: { url: dataUrl(png(100)) } }] }, { role: "user", content: "hi" }],
    });
    expect(inAssistant.status).toBe(400);
    expect(inAssistant.json.error.message).toContain("only allowed in user messages");
    expect(await inboxTotal()).toBe(before);
  });

  it("answers every failed fetch alike: a closed port, a port that is not HTTP and a TLS port read the same", async () => {
    const listening = async (server: TcpServer): Promise<number> => {
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
      return (server.address() as AddressInfo).port;
    };
    const closed = createTcpServer();
    const closedPort = await listening(closed);
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    // Speaks first and hangs up, as an SSH or SMTP server does.
    const notHttp = createTcpServer((socket) => socket.end("SSH-2.0-OpenSSH_9.6\r\n"));
    // A TLS server without a certificate: every handshake ends in an alert.
    const tls = createTlsServer({});
    const servers = [notHttp, tls];
    // The gateway's client may keep a socket open: closing waits for none.
    const sockets: Socket[] = [];
    for (const server of servers) server.on("connection", (socket: Socket) => sockets.push(socket));
    try {
      const urls = [`http://127.0.0.1:${closedPort}/cat.png`, `http://127.0.0.1:${await listening(notHttp)}/cat.png`, `https://127.0.0.1:${await listening(tls)}/cat.png`];
      const before = await inboxTotal();
      const answers = [];
      for (const url of urls) {
        const res = await post(gw.url, { model: "fake-model", messages: [{ role: "user", content: [{ type: "image_url", image_url: { url } }] }] });
        answers.push({ status: res.status, error: res.json.error });
      }
      const uniform = { status: 400, error: { message: "image #1: the image could not be fetched", type: "invalid_request_error", code: "image_fetch_failed" } };
      expect(answers).toEqual([uniform, uniform, uniform]);
      expect(await inboxTotal()).toBe(before);
    } finally {
      for (const socket of sockets) socket.destroy();
      await Promise.all(servers.map((server) => new Promise<void>((resolve) => server.close(() => resolve()))));
    }
  });
});

describe("images with the offline echo model and the default settings", () => {
  it("the echo model mentions the image it got", async () => {
    const res = await post(echoGw.url, { model: "echo", messages: [{ role: "user", content: [{ type: "text", text: "look" }, { type: "image_url", image_url: { url: dataUrl(png(2048), "image/png") } }] }] });
    expect(res.status).toBe(200);
    expect(res.json.choices[0].message.content).toBe("Echo: look [image: image/png, 2.0 KB]");
  });

  it("refuses an image URL whose host is an IPv6 literal that embeds an IPv4 address (NAT64)", async () => {
    const res = await post(echoGw.url, { model: "echo", messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: "https://[64:ff9b::7f00:1]/cat.png" } }] }] });
    expect(res.status).toBe(400);
    expect(res.json.error).toMatchObject({ code: "invalid_image_url", message: "image #1: the image host 64:ff9b::7f00:1 is not a public address" });
  });

  it("does not fetch loopback http URLs unless the setting allows it", async () => {
    const res = await post(echoGw.url, { model: "echo", messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: `${imagesUrl}/cat.png` } }] }] });
    expect(res.status).toBe(400);
    expect(res.json.error).toMatchObject({ code: "invalid_image_url" });
  });
});
