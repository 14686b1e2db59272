import { describe, expect, it } from "vitest";
import { threadKeyForSessionKey } from "../../src/adapters/index.js";
import { discordSessionKey, discordThreadKey } from "../../src/adapters/discord/channels.js";
import { slackThreadKey } from "../../src/adapters/slack/events.js";

describe("thread keys from session keys", () => {
  it("maps Slack thread sessions and Discord thread sessions back to their memory keys", () => {
    expect(threadKeyForSessionKey("slack:T1:C1:1718900000.000100")).toBe(slackThreadKey("T1", "C1", "1718900000.000100"));
    expect(threadKeyForSessionKey("slack:T1:C1:1718900000.000100:U9")).toBe(slackThreadKey("T1", "C1", "1718900000.000100"));
    expect(threadKeyForSessionKey(discordSessionKey("G1", "C1", "TH1"))).toBe(discordThreadKey("TH1"));
  });

  it("has no thread for channel-level sessions and other platforms", () => {
    expect(threadKeyForSessionKey("slack:T1:D1")).toBeNull();
    expect(threadKeyForSessionKey(discordSessionKey(null, "C1", null))).toBeNull();
    expect(threadKeyForSessionKey("webhook:gh:chat-1")).toBeNull();
    expect(threadKeyForSessionKey("api:session-1:x")).toBeNull();
  });
});
