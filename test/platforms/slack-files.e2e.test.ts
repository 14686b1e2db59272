// Slack files through a real gateway: a mention that shares an image is recorded with a
// reference only; when the turn takes it, the Slack adapter downloads `url_private` from the fake
// Slack with the bot token, and the (offline echo) model sees the image. Files that cannot be
// used are left out with a reason the reply shows; the token never goes to a host that is not Slack's.
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FakeSlack, type FakeSlackFile } from "../support/fake-slack.js";
import { startTestGateway, waitFor, type TestGateway } from "../support/gateway.js";
import { deliveriesOf, inboxRowOf } from "./support/probes.js";
import { postSlackEvent, slackMention, SLACK_BOT, SLACK_SECRET, SLACK_TOKEN } from "./support/slack.js";

const LOG_LEVEL = process.env.PLATFORMS_LOG ?? "silent";
let fake: FakeSlack;
let gw: TestGateway;
let elsewhere: Server;
const elsewhereRequests: IncomingMessage[] = [];

function png(size: number): Buffer {
  const bytes = Buffer.alloc(size, 3);
  Buffer.from("89504e470d0a1a0a", "hex").copy(bytes);
  return bytes;
}

beforeAll(async () => {
  fake = await FakeSlack.start({ botToken: SLACK_TOKEN, botUserId: SLACK_BOT });
  elsewhere = createServer((req, res) => {
    elsewhereRequests.push(req);
    res.writeHead(200, { "content-type": "image/png" });
    res.end(png(100));
  });
  await new Promise<void>((resolve) => elsewhere.listen(0, "127.0.0.1", resolve));
  gw = await startTestGateway({
    http: true,
    workers: true,
    env: { SLACK_SIGNING_SECRET: SLACK_SECRET, SLACK_BOT_TOKEN: SLACK_TOKEN, SLACK_API_URL: fake.url, MEDIA_MAX_IMAGE_BYTES: "4096", LOG_LEVEL },
  });
}, 60_000);

afterAll(async () => {
  await gw?.stop();
  await fake?.close();
  elsewhere?.closeAllConnections();
  await new Promise((resolve) => elsewhere?.close(resolve));
});

/** Posts a mention sharing `files`; resolves with the text of the reply Slack received. */
async function mentionWithFiles(question: string, files: Array<Partial<FakeSlackFile>>): Promise<{ reply: string; sessionId: string; inboxId: number }> {
  const mention = slackMention(question);
  const envelope = JSON.parse(mention.body) as { event: Record<string, unknown> };
  envelope.event.files = files;
  const res = await postSlackEvent(gw.gateway.url!, JSON.stringify(envelope));
  expect(res.status).toBe(200);
  const row = await inboxRowOf(gw.gateway, "slack", mention.eventId);
  const sent = await waitFor(
    async () => (await deliveriesOf(gw.gateway, row.session_id)).find((d) => d.inbox_id === row.id && d.status === "sent"),
    15_000,
    "the reply",
  );
  return { reply: sent.text, sessionId: row.session_id, inboxId: row.id };
}

describe("Slack files", () => {
  it("downloads a shared image with the bot token when the turn runs, and the model sees it", async () => {
    const file = fake.addFile("chart.png", png(1229), "image/png");
    const before = fake.fileDownloads.length;
    const { reply, sessionId, inboxId } = await mentionWithFiles("what does this chart show?", [file]);
    expect(reply).toBe("Echo: what does this chart show? [image: image/png, 1.2 KB]");
    const downloads = fake.fileDownloads.slice(before);
    expect(downloads).toEqual([{ path: new URL(file.url_private).pathname, authorization: `Bearer ${SLACK_TOKEN}`, served: "file" }]);
    // The inbox row keeps the reference only; the image is stored with the user message.
    const row = await gw.gateway.store.getInboxRow(inboxId);
    expect(JSON.stringify(row?.payload)).not.toContain("iVBOR");
    expect((row?.payload.attachments as Array<{ url: string }>)[0].url).toBe(file.url_private);
    const [user] = (await gw.gateway.store.getMessages(sessionId)).filter((m) => m.role === "user");
    expect(user.attachments).toMatchObject([{ content_type: "image/png", size_bytes: 1229, name: "chart.png" }]);
  });

  it("leaves out what cannot be used, says why, and still answers", async () => {
    const big = fake.addFile("huge.png", png(8000), "image/png");
    const pdf = fake.addFile("report.pdf", Buffer.from("%PDF-1.7 ..."), "application/pdf");
    const lying = fake.addFile("notes.png", Buffer.from("plain text, not a picture"), "image/png");
    const before = fake.fileDownloads.length;
    const { reply, sessionId } = await mentionWithFiles("three files", [big, pdf, lying]);
    expect(reply).toContain("Echo: three files");
    expect(reply).toContain("[attachment huge.png was not included: it is 7.8 KB, more than the 4.0 KB allowed per image]");
    expect(reply).toContain("[attachment report.pdf was not included: it is application/pdf, and only images are read]");
    expect(reply).toContain("[attachment notes.png was not included: image is not a PNG, JPEG, GIF or WebP image]");
    expect(reply).not.toContain("[image:");
    // Declared too big or not an image: not even downloaded.
    expect(fake.fileDownloads.slice(before).map((d) => d.path)).toEqual([new URL(lying.url_private).pathname]);
    const [user] = (await gw.gateway.store.getMessages(sessionId)).filter((m) => m.role === "user");
    expect(user.content).toBe("three files");
    expect(user.attachments).toBeUndefined();
    expect((user.display_metadata?.attachments_rejected as unknown[]).length).toBe(3);
  });

  it("never sends the bot token to a host that is not Slack's", async () => {
    const port = (elsewhere.address() as AddressInfo).port;
    const { reply } = await mentionWithFiles("look at this", [
      { id: "F0EVIL", name: "bait.png", mimetype: "image/png", size: 100, url_private: `http://localhost:${port}/bait.png` },
    ]);
    expect(reply).toContain("[attachment bait.png was not included: localhost is not a Slack file host]");
    expect(elsewhereRequests).toHaveLength(0);
  });

  it("checks every redirect hop: a Slack file URL that redirects to another host is not followed there", async () => {
    const port = (elsewhere.address() as AddressInfo).port;
    const before = elsewhereRequests.length;
    const file = fake.addRedirectingFile("moved.png", `http://localhost:${port}/moved.png`, "image/png");
    const { reply } = await mentionWithFiles("a moved file", [file]);
    expect(reply).toContain("[attachment moved.png was not included: localhost is not a Slack file host]");
    expect(reply).not.toContain("[image:");
    expect(elsewhereRequests.length).toBe(before);
  });
});
