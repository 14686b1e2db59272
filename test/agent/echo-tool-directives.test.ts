// The echo model's `[[tool:...]]` directive through running gateways with no model server and a
// real MCP server of ours: off by default, so a platform user (a signed webhook) and an API
// client get their text echoed and no tool runs; on (ECHO_TOOL_DIRECTIVES=true), the same
// message calls the tool.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { githubSignature } from "../../src/adapters/webhook/index.js";
import { startTestGateway, waitFor, type TestGateway } from "../support/gateway.js";
import { startMcpHttpServer, type McpHttpServer } from "../support/mcp-server.js";
import { makeTempDir } from "../support/tmp.js";

const SECRET = "webhook-secret-for-directives";
const DIRECTIVE = '[[tool:tools__echo {"text":"chosen by the sender"}]]';

let mcp: McpHttpServer;
const temp = makeTempDir("sb-echo-directives");
const gateways: TestGateway[] = [];

async function gatewayWith(env: Record<string, string>): Promise<TestGateway> {
  const gw = await startTestGateway({ env: { SWITCHBOARD_CONFIG: join(temp.dir, "switchboard.yaml"), LLM_BASE_URL: "", ...env } });
  gateways.push(gw);
  await waitFor(
    async () => ((await (await fetch(`${gw.gateway.url}/health`)).json()) as { mcp: Record<string, { state: string }> }).mcp.tools?.state === "connected",
    30_000,
    "the MCP server to be connected",
  );
  return gw;
}

const toolCalls = (): number => mcp.journal.filter((e) => e.method === "tools/call").length;

async function viaWebhook(gw: TestGateway, text: string): Promise<string> {
  const body = JSON.stringify({ id: `d-${Math.random()}`, chat_id: `room-${Math.random()}`, user_id: "u-1", text });
  const res = await fetch(`${gw.gateway.url}/webhooks/chat`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-hub-signature-256": githubSignature(SECRET, body) },
    body,
  });
  expect(res.status).toBe(200);
  return ((await res.json()) as { reply: string }).reply;
}

async function viaApi(gw: TestGateway, text: string): Promise<string> {
  const res = await fetch(`${gw.gateway.url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: "echo", messages: [{ role: "user", content: text }] }),
  });
  expect(res.status).toBe(200);
  return ((await res.json()) as { choices: Array<{ message: { content: string } }> }).choices[0].message.content;
}

beforeAll(async () => {
  mcp = await startMcpHttpServer({ token: "mcp-secret", tools: ["echo"] });
  writeFileSync(
    join(temp.dir, "switchboard.yaml"),
    JSON.stringify({
      webhooks: { chat: { secret: SECRET, style: "github", reply: "sync" } },
      mcp_servers: { tools: { url: mcp.url, headers: { Authorization: "Bearer mcp-secret" } } },
    }),
  );
}, 30_000);

afterAll(async () => {
  for (const gw of gateways) await gw.stop();
  await mcp?.close();
  temp.cleanup();
});

describe("the echo model's tool directive", () => {
  it("is off by default: a webhook sender and an API client get their text back, and no tool runs", async () => {
    const gw = await gatewayWith({});
    expect(await viaWebhook(gw, `run it ${DIRECTIVE}`)).toBe(`Echo: run it ${DIRECTIVE}`);
    expect(await viaApi(gw, `run it ${DIRECTIVE}`)).toBe(`Echo: run it ${DIRECTIVE}`);
    expect(toolCalls()).toBe(0);
  }, 60_000);

  it("with ECHO_TOOL_DIRECTIVES=true, the same message calls the tool", async () => {
    const gw = await gatewayWith({ ECHO_TOOL_DIRECTIVES: "true" });
    const before = toolCalls();
    expect(await viaApi(gw, `run it ${DIRECTIVE}`)).toBe("Echo: run it | tools__echo -> echo: chosen by the sender");
    expect(toolCalls()).toBe(before + 1);
  }, 60_000);
});
