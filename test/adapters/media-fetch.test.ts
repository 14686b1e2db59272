// The adapters' fetchMedia against the fake platforms: Slack files need the bot token (without it
// Slack serves its sign-in page), Discord's CDN needs a valid signed URL and no token; neither
// adapter fetches from a host that is not its platform's.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fetchDiscordAttachment, isDiscordAttachmentUrl } from "../../src/adapters/discord/attachments.js";
import { fetchSlackFile, isSlackFileUrl } from "../../src/adapters/slack/files.js";
import { MediaError } from "../../src/gateway/media.js";
import { FakeDiscord } from "../support/fake-discord.js";
import { FakeSlack } from "../support/fake-slack.js";

const TOKEN = "xoxb-test-token";
const limits = { maxBytes: 4096, timeoutMs: 2000 };
const PNG = Buffer.concat([Buffer.from("89504e470d0a1a0a", "hex"), Buffer.alloc(40)]);
let slack: FakeSlack;
let discord: FakeDiscord;

beforeAll(async () => {
  slack = await FakeSlack.start({ botToken: TOKEN });
  discord = await FakeDiscord.start({ botToken: "discord-token" });
});

afterAll(async () => {
  await slack?.close();
  await discord?.close();
});

async function mediaError(promise: Promise<unknown>): Promise<MediaError> {
  try {
    await promise;
  } catch (err) {
    if (err instanceof MediaError) return err;
    throw err;
  }
  throw new Error("expected a MediaError");
}

describe("Slack fetchMedia", () => {
  it("downloads url_private with the bot token", async () => {
    const file = slack.addFile("a.png", PNG, "image/png");
    const got = await fetchSlackFile({ url: file.url_private }, limits, { botToken: TOKEN, apiUrl: slack.url });
    expect(Buffer.from(got.data).equals(PNG)).toBe(true);
    expect(got.contentType).toBe("image/png");
  });

  it("says so when Slack answers with its sign-in page instead of the file", async () => {
    const file = slack.addFile("b.png", PNG, "image/png");
    const err = await mediaError(fetchSlackFile({ url: file.url_private }, limits, { botToken: "xoxb-revoked", apiUrl: slack.url }));
    expect(err.message).toContain("files:read");
    expect(slack.fileDownloads.at(-1)).toMatchObject({ served: "login" });
  });

  it("sends the token to Slack's hosts only", () => {
    const api = "https://slack.com/api/";
    expect(isSlackFileUrl(new URL("https://files.slack.com/files-pri/T1-F1/a.png"), api)).toBe(true);
    expect(isSlackFileUrl(new URL("https://files.slack.com.evil.example/a.png"), api)).toBe(false);
    expect(isSlackFileUrl(new URL("http://files.slack.com/a.png"), api)).toBe(false);
    expect(isSlackFileUrl(new URL("https://evilslack.com/a.png"), api)).toBe(false);
    expect(isSlackFileUrl(new URL("http://127.0.0.1:9/a.png"), "http://127.0.0.1:9/api/")).toBe(true);
  });
});

describe("Discord fetchMedia", () => {
  it("downloads a signed CDN URL, and gets nothing for an expired or tampered one", async () => {
    const ok = discord.addAttachment("1", "a.png", PNG, "image/png");
    const got = await fetchDiscordAttachment({ url: ok.url }, limits, { apiUrl: discord.url });
    expect(Buffer.from(got.data).equals(PNG)).toBe(true);
    const expired = discord.addAttachment("1", "old.png", PNG, "image/png", -60);
    expect((await mediaError(fetchDiscordAttachment({ url: expired.url }, limits, { apiUrl: discord.url }))).message).toContain("404");
    const tampered = ok.url.replace(/hm=[0-9a-f]{4}/, "hm=0000");
    expect((await mediaError(fetchDiscordAttachment({ url: tampered }, limits, { apiUrl: discord.url }))).code).toBe("fetch_failed");
    expect(discord.cdnDownloads.map((d) => d.authorization)).toEqual([null, null, null]);
  });

  it("fetches from Discord's CDN hosts only", () => {
    const api = "https://discord.com/api/v10";
    expect(isDiscordAttachmentUrl(new URL("https://cdn.discordapp.com/attachments/1/2/a.png?ex=1"), api)).toBe(true);
    expect(isDiscordAttachmentUrl(new URL("https://media.discordapp.net/attachments/1/2/a.png"), api)).toBe(true);
    expect(isDiscordAttachmentUrl(new URL("https://cdn.discordapp.com.evil.example/a.png"), api)).toBe(false);
    expect(isDiscordAttachmentUrl(new URL("http://169.254.169.254/latest"), api)).toBe(false);
  });
});
