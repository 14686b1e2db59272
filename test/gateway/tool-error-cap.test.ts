// A tool's error text is capped like its result: a real MCP server of ours (Streamable HTTP on
// loopback) throws a 3 MB error, and what the model reads, the transcript stores and the client
// gets back stay within the cap.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAX_RESULT_CHARS } from "../../src/agent/tools/registry.js";
import { messagesOf, startFakeOpenAI, type FakeOpenAI } from "../support/fake-openai.js";
import { startTestGateway, waitFor, type TestGateway } from "../support/gateway.js";
import { startMcpHttpServer, type McpHttpServer } from "../support/mcp-server.js";
import { deletePrefix, newRedisClient } from "../support/redis.js";
import { makeTempDir } from "../support/tmp.js";

const HUGE = 3_000_000;
/** The cap, the "Error: " before it and the truncation mark after it. */
const MOST = MAX_RESULT_CHARS + 100;

let fake: FakeOpenAI;
let mcp: McpHttpServer;
let gw: TestGateway;
const temp = makeTempDir("sb-tool-error-cap");

beforeAll(async () => {
  fake = await startFakeOpenAI({ apiKey: "model-key" });
  mcp = await startMcpHttpServer({ token: "mcp-secret", tools: ["huge_error"] });
  const configPath = join(temp.dir, "switchboard.yaml");
  writeFileSync(configPath, JSON.stringify({ mcp_servers: { big: { url: mcp.url, headers: { Authorization: "Bearer mcp-secret" } } } }));
  gw = await startTestGateway({ env: { SWITCHBOARD_CONFIG: configPath, LLM_BASE_URL: fake.url, LLM_API_KEY: "model-key", LLM_MODEL: "fake-model" } });
  await waitFor(
    async () => {
      const res = await fetch(`${gw.gateway.url}/health`);
      const body = (await res.json()) as { mcp: Record<string, { state: string }> };
      return body.mcp.big?.state === "connected";
    },
    30_000,
    "the MCP server to be connected",
  );
}, 60_000);

afterAll(async () => {
  await gw?.stop();
  if (gw) {
    const redis = newRedisClient();
    await deletePrefix(redis, gw.env.SWITCHBOARD_QUEUE_PREFIX).finally(() => redis.disconnect());
  }
  await mcp?.close();
  await fake?.close();
  temp.cleanup();
});

describe("a tool's error text", () => {
  it("is capped like a result: the model, the transcript and the reply get at most the cap", async () => {
    const session = "huge-error";
    fake.enqueue({ kind: "tool_calls", calls: [{ name: "big__huge_error", arguments: { chars: HUGE } }] }, { kind: "echo_tool_results" });
    const res = await fetch(`${gw.gateway.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-session-id": session },
      body: JSON.stringify({ model: "fake-model", messages: [{ role: "user", content: "call the failing tool" }] }),
    });
    expect(res.status).toBe(200);
    const reply = ((await res.json()) as { choices: Array<{ message: { content: string } }> }).choices[0].message.content;
    expect(reply.startsWith("Tool results: Error: ")).toBe(true);
    expect(reply.length).toBeLessThan(MOST);

    const second = fake.completionRequests().at(-1);
    const toolMessage = messagesOf(second!).find((m) => m.role === "tool");
    expect(String(toolMessage?.content).length).toBeLessThan(MOST);
    expect(String(toolMessage?.content)).toContain("[truncated]");

    const stored = await fetch(`${gw.gateway.url}/api/sessions/${session}/messages`);
    const { messages } = (await stored.json()) as { messages: Array<{ role: string; content: string | null }> };
    const tool = messages.find((m) => m.role === "tool");
    expect(tool?.content?.length).toBeLessThan(MOST);
  }, 60_000);
});
