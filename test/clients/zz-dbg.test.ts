import { it } from "vitest";
import { startTestGateway } from "./support/gateway.js";
import { startFakeOpenAI } from "../support/fake-openai.js";
it("dbg", async () => {
  const fake = await startFakeOpenAI({ apiKey: "model-key" });
  const gw = await startTestGateway({ workers: true, env: { LOG_LEVEL: "debug", LLM_BASE_URL: fake.url, LLM_API_KEY: "model-key", LLM_MODEL: "fake-model", TURN_REPLY_TIMEOUT_MS: "4000" } });
  const res = await fetch(`${gw.url}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ model: "x", messages: [{ role: "user", content: "hi there" }] }) });
  console.log(res.status, await res.text());
  console.log(JSON.stringify(fake.requests.map(r => [r.status, r.body]), null, 1).slice(0, 3000));
  await gw.stop();
  await fake.close();
}, 60000);
