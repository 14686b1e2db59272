// Telegram photos and WhatsApp images through a real gateway: the message is recorded with a
// media reference only; when the turn takes it, the adapter looks the file up (Telegram getFile,
// the Graph media id) and downloads it with the platform's token from the fake platform, and the
// offline echo model names the image it got. What cannot be used is left out with its reason.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FakeTelegram, fakeJpeg, type FakeUpdate } from "../support/fake-telegram.js";
import { FakeWhatsApp, type FakeInboundMessage } from "../support/fake-whatsapp.js";
import { startTestGateway, waitFor, type TestGateway } from "../support/gateway.js";
import { deliveriesOf, inboxRowOf } from "./support/probes.js";
import { inboxRowOfUpdate, TELEGRAM_BOT_USERNAME, TELEGRAM_TOKEN } from "./support/telegram.js";

const LOG_LEVEL = process.env.PLATFORMS_LOG ?? "silent";
const WA_TOKEN = "EAAJB3kFAKEmediaTokenForTestsOnly0a1b2c3";
const WA_SECRET = "a1e4b6f7a8c9e0f1a2b3c4d5e6f7a8b9";
const WA_PHONE = "106540352242933";

let telegram: FakeTelegram;
let whatsapp: FakeWhatsApp;
let gw: TestGateway;

beforeAll(async () => {
  telegram = await FakeTelegram.start({ token: TELEGRAM_TOKEN, username: TELEGRAM_BOT_USERNAME });
  whatsapp = await FakeWhatsApp.start({ accessToken: WA_TOKEN, appSecret: WA_SECRET, phoneNumberId: WA_PHONE });
  gw = await startTestGateway({
    http: true,
    workers: true,
    env: {
      TELEGRAM_BOT_TOKEN: TELEGRAM_TOKEN,
      TELEGRAM_API_URL: telegram.url,
      WHATSAPP_ACCESS_TOKEN: WA_TOKEN,
      WHATSAPP_APP_SECRET: WA_SECRET,
      WHATSAPP_VERIFY_TOKEN: "verify-media",
      WHATSAPP_PHONE_NUMBER_ID: WA_PHONE,
      WHATSAPP_API_URL: whatsapp.url,
      MEDIA_MAX_IMAGE_BYTES: "4096",
      LOG_LEVEL,
    },
  });
}, 60_000);

afterAll(async () => {
  await gw?.stop();
  await telegram?.close();
  await whatsapp?.close();
});

/** Pushes the update to the (polling) gateway; resolves with the sent reply and the session. */
async function telegramReply(update: FakeUpdate): Promise<{ reply: string; sessionId: string }> {
  telegram.pushUpdates(update);
  const row = await inboxRowOfUpdate(gw.gateway, update, 15_000);
  const sent = await waitFor(
    async () => (await deliveriesOf(gw.gateway, row.session_id)).find((d) => d.inbox_id === row.id && d.status === "sent"),
    15_000,
    "the Telegram reply",
  );
  return { reply: sent.text, sessionId: row.session_id };
}

async function whatsappReply(message: FakeInboundMessage): Promise<{ reply: string; sessionId: string }> {
  const res = await whatsapp.deliver(gw.gateway.url!, whatsapp.messagesWebhook([message]));
  expect(res.status).toBe(200);
  const row = await inboxRowOf(gw.gateway, "whatsapp", message.wamid);
  const sent = await waitFor(
    async () => (await deliveriesOf(gw.gateway, row.session_id)).find((d) => d.inbox_id === row.id && d.status === "sent"),
    15_000,
    "the WhatsApp reply",
  );
  return { reply: sent.text, sessionId: row.session_id };
}

describe("Telegram photos", () => {
  it("downloads the largest size with getFile and the token in the path, and the model sees it", async () => {
    const { chat } = telegram.privateChat();
    const update = telegram.userMessage(chat, "what is in this picture?", { media: "photo", file: { data: fakeJpeg(1229) } });
    const before = telegram.fileDownloads.length;
    const { reply, sessionId } = await telegramReply(update);
    expect(reply).toBe("Echo: what is in this picture? [image: image/jpeg, 1.2 KB]");
    const photo = (update.message as { photo: Array<{ file_id: string }> }).photo;
    expect(telegram.callsTo("getFile").map((c) => c.params.file_id)).toContain(photo[photo.length - 1].file_id);
    expect(telegram.fileDownloads.slice(before)).toEqual([{ path: telegram.files.get(photo[photo.length - 1].file_id)?.path, tokenOk: true, status: 200 }]);
    const [user] = (await gw.gateway.store.getMessages(sessionId)).filter((m) => m.role === "user");
    expect(user.attachments).toMatchObject([{ content_type: "image/jpeg", size_bytes: 1229, name: "photo" }]);
  });

  it("takes an image document, and leaves out a too large photo and a PDF with their reasons", async () => {
    const { chat } = telegram.privateChat();
    const doc = telegram.userMessage(chat, "and this one?", { media: "document", file: { data: fakeJpeg(900), mimeType: "image/jpeg", name: "scan.jpg" } });
    expect((await telegramReply(doc)).reply).toBe("Echo: and this one? [image: image/jpeg, 900 B]");

    const before = telegram.fileDownloads.length;
    const big = telegram.userMessage(chat, "a big one", { media: "photo", file: { data: fakeJpeg(8000) } });
    const bigReply = (await telegramReply(big)).reply;
    expect(bigReply).toContain("Echo: a big one");
    expect(bigReply).toContain("[attachment photo was not included: it is 7.8 KB, more than the 4.0 KB allowed per image]");
    expect(bigReply).not.toContain("[image:");
    const pdf = telegram.userMessage(chat, "the report", { media: "document" });
    expect((await telegramReply(pdf)).reply).toContain("[attachment report.pdf was not included: it is application/pdf, and only images are read]");
    // Declared too big, or not an image: never downloaded.
    expect(telegram.fileDownloads.slice(before)).toEqual([]);
  });
});

describe("WhatsApp images", () => {
  it("looks the media id up, downloads it with the bearer token, and the model sees it", async () => {
    const message = whatsapp.imageMessage("Can you find this one in blue?", fakeJpeg(2048));
    const id = (message.message.image as { id: string }).id;
    const { reply, sessionId } = await whatsappReply(message);
    expect(reply).toBe("Echo: Can you find this one in blue? [image: image/jpeg, 2.0 KB]");
    expect(whatsapp.mediaDownloads.filter((d) => d.id === id)).toEqual([{ id, authorization: `Bearer ${WA_TOKEN}`, status: 200 }]);
    const [user] = (await gw.gateway.store.getMessages(sessionId)).filter((m) => m.role === "user");
    expect(user.attachments).toMatchObject([{ content_type: "image/jpeg", size_bytes: 2048, name: "image" }]);
    const row = await inboxRowOf(gw.gateway, "whatsapp", message.wamid);
    expect((row.payload.attachments as Array<{ id: string }>)[0].id).toBe(id);
  });

  it("leaves out a too large image with its reason, without downloading it, and still answers", async () => {
    const message = whatsapp.imageMessage("too big?", fakeJpeg(9000));
    const id = (message.message.image as { id: string }).id;
    const { reply } = await whatsappReply(message);
    expect(reply).toContain("Echo: too big?");
    expect(reply).toContain("[attachment image was not included: it is 8.8 KB, more than the 4.0 KB allowed per image]");
    expect(reply).not.toContain("[image:");
    expect(whatsapp.mediaDownloads.filter((d) => d.id === id)).toEqual([]);
  });

  it("leaves out a document that is not an image with its reason", async () => {
    const message = whatsapp.fixtureMessage("document_message.json");
    const { reply } = await whatsappReply(message);
    expect(reply).toContain("Echo: Here is the receipt");
    expect(reply).toContain("[attachment receipt-2025-06.pdf was not included: it is application/pdf, and only images are read]");
  });
});
