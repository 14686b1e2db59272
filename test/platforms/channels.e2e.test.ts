// Per-channel settings through a running gateway on Slack, with a fake OpenAI-compatible model and
// an MCP server of our own: a channel's own system prompt, model, MCP servers (none) and reply
// style (final: one post, no edits) reach the model request and the platform; the team's settings
// apply in its other channels; the usage records name each model.
import { writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { channelSettingsFor, type ChannelSettings } from "../../src/gateway/channel-settings.js";
import { messagesOf, startFakeOpenAI, textOfMessage, type FakeOpenAI, type RecordedRequest } from "../support/fake-openai.js";
import { FakeSlack } from "../support/fake-slack.js";
import { startTestGateway, waitFor, type TestGateway } from "../support/gateway.js";
import { MCP_SERVER_SCRIPT } from "../support/mcp-server.js";
import { inbound } from "../support/messages.js";
import { makeTempDir } from "../support/tmp.js";
import { postSlackEvent, slackMention, slackThreadReply, SLACK_BOT, SLACK_SECRET, SLACK_TOKEN } from "./support/slack.js";
import { inboxRowOf } from "./support/probes.js";

const LOG_LEVEL = process.env.PLATFORMS_LOG ?? "silent";
const REPO = resolve(import.meta.dirname, "..", "..");

describe("which channel settings apply", () => {
  const entry = (name: string, match: string): ChannelSettings => ({ name, match });
  const channels = [entry("platform", "slack"), entry("channel", "slack:channel:C1"), entry("team", "slack:team:T1"), entry("other", "discord:guild:9")];

  it("takes the most specific match: a channel over a team over a platform", () => {
    expect(channelSettingsFor(channels, { ...inbound("s", "hi"), platform: "slack", chatId: "C1", workspaceId: "T1" })?.name).toBe("channel");
    expect(channelSettingsFor(channels, { ...inbound("s", "hi"), platform: "slack", chatId: "C2", workspaceId: "T1" })?.name).toBe("team");
    expect(channelSettingsFor(channels, { ...inbound("s", "hi"), platform: "slack", chatId: "C2", workspaceId: "T2" })?.name).toBe("platform");
    expect(channelSettingsFor(channels, { ...inbound("s", "hi"), platform: "telegram", chatId: "C1" })).toBeNull();
  });
});

describe("per-channel settings on Slack", () => {
  let slack: FakeSlack;
  let model: FakeOpenAI;
  let gw: TestGateway;
  const temp = makeTempDir("sb-channels");

  beforeAll(async () => {
    slack = await FakeSlack.start({ botToken: SLACK_TOKEN, botUserId: SLACK_BOT });
    model = await startFakeOpenAI({ apiKey: "model-key" });
    // Slow enough that a streamed reply would post before it is done, then edit.
    model.setDefault({ kind: "slow", chunks: 6, chunkDelayMs: 250 });
    const config = join(temp.dir, "channels.yaml");
    // JSON is YAML: the same loader as an operator's file.
    writeFileSync(config, JSON.stringify({
      mcp_servers: { local: { command: process.execPath, args: ["--import", "tsx", MCP_SERVER_SCRIPT], cwd: REPO, env: { MCP_TEST_JOURNAL: join(temp.dir, "journal.jsonl") } } },
      channels: {
        team: { match: "slack:team:T0TEAM00001", system_prompt: "You answer for the team." },
        support: { match: "slack:channel:C0SUPPORT", system_prompt: "You are the support desk.", model: "support-model", mcp_servers: [], reply_style: "final" },
        urgent: { match: "slack:channel:C0URGENT", busy_mode: "interrupt" },
      },
    }));
    gw = await startTestGateway({
      env: { SLACK_SIGNING_SECRET: SLACK_SECRET, SLACK_BOT_TOKEN: SLACK_TOKEN, SLACK_API_URL: slack.url, LLM_BASE_URL: model.url, LLM_API_KEY: "model-key", LLM_MODEL: "fake-model", SWITCHBOARD_CONFIG: config, LOG_LEVEL },
    });
    await waitFor(async () => ((await (await fetch(`${gw.gateway.url}/health`)).json()) as { mcp: Record<string, { state: string }> }).mcp.local?.state === "connected" || null, 60_000, "the MCP server");
  }, 90_000);

  afterAll(async () => {
    await gw?.stop();
    await model?.close();
    await slack?.close();
    temp.cleanup();
  });

  /** Mentions the bot in `channel`; the model request it led to, once its reply is posted in full. */
  async function ask(channel: string, question: string): Promise<RecordedRequest> {
    const mention = slackMention(question, channel);
    expect((await postSlackEvent(gw.gateway.url!, mention.body)).status).toBe(200);
    await waitFor(() => slack.messagesIn(channel).find((m) => m.text.includes(question) && m.text.endsWith(" 6")), 20_000, `the full reply in ${channel}`);
    return model.completionRequests().find((r) => messagesOf(r).some((m) => textOfMessage(m).includes(question)))!;
  }

  const toolNames = (request: RecordedRequest): string[] =>
    ((request.body as { tools?: Array<{ function: { name: string } }> }).tools ?? []).map((tool) => tool.function.name);

  it("sends a channel's prompt and model without MCP tools, and posts its reply once", async () => {
    const request = await ask("C0SUPPORT", "where is my order?");
    expect((request.body as { model: string }).model).toBe("support-model");
    expect(textOfMessage(messagesOf(request)[0]!)).toBe("You are the support desk.");
    expect(toolNames(request).filter((name) => name.startsWith("local__"))).toEqual([]);
    expect(slack.callsTo("chat.update").filter((call) => call.params.channel === "C0SUPPORT")).toEqual([]);
  }, 60_000);

  it("applies the team's settings in its other channels, streamed, with every MCP tool", async () => {
    const request = await ask("C0GENERAL", "what is new?");
    expect((request.body as { model: string }).model).toBe("fake-model");
    expect(textOfMessage(messagesOf(request)[0]!)).toBe("You answer for the team.");
    expect(toolNames(request).some((name) => name.startsWith("local__"))).toBe(true);
    expect(slack.callsTo("chat.update").filter((call) => call.params.channel === "C0GENERAL").length).toBeGreaterThan(0);
    const usage = (await (await fetch(`${gw.gateway.url}/api/usage?platform=slack`)).json()) as { totals: Array<{ model: string; turns: number }> };
    expect(usage.totals.map((row) => [row.model, row.turns]).sort()).toEqual([["fake-model", 1], ["support-model", 1]]);
  }, 60_000);

  it("lets a channel's busy mode interrupt a running turn where the platform's queues it", async () => {
    const asked = model.completionRequests().length;
    const first = slackMention("a long question for the urgent channel", "C0URGENT");
    expect((await postSlackEvent(gw.gateway.url!, first.body)).status).toBe(200);
    // Its turn is streaming from the model: a follow-up in its thread arrives now.
    await waitFor(() => model.completionRequests().length > asked || null, 10_000, "the first turn's model call");
    const followUp = slackThreadReply("C0URGENT", first.ts, "never mind, this instead");
    const envelope = JSON.parse(followUp.body) as { event: Record<string, unknown> };
    envelope.event.parent_user_id = SLACK_BOT;
    expect((await postSlackEvent(gw.gateway.url!, JSON.stringify(envelope))).status).toBe(200);
    const stopped = await waitFor(async () => {
      const row = await inboxRowOf(gw.gateway, "slack", first.eventId);
      return row.status === "pending" ? null : row;
    }, 20_000, "the first message's outcome");
    expect(stopped.status).toBe("interrupted");
    await waitFor(async () => ((await inboxRowOf(gw.gateway, "slack", followUp.eventId)).status === "done") || null, 20_000, "the follow-up answered");
  }, 60_000);
});
