// The echo model's directive parser must not stall a gateway: a 99,000-character adversarial
// message goes through a real `switchboard serve` process while another client keeps asking
// /health, which must keep answering promptly (one event loop serves both).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawnGatewayProcess, testGatewayEnv, type GatewayProcess } from "../support/gateway.js";
import { makeTempDir } from "../support/tmp.js";

describe("the echo model under an adversarial message", () => {
  const temp = makeTempDir("sb-echo-adversarial");
  let gateway: GatewayProcess;

  beforeAll(async () => {
    gateway = await spawnGatewayProcess(["serve"], testGatewayEnv(temp.dir, { LLM_BASE_URL: "", LLM_MODEL: "", SWITCHBOARD_API_KEY: "", SWITCHBOARD_CONFIG: "", ECHO_TOOL_DIRECTIVES: "true" }));
  }, 60_000);

  afterAll(async () => {
    await gateway?.stop();
    temp.cleanup();
  });

  it("answers a 99,000-character message of directive openings and ]] while /health stays prompt", async () => {
    const base = gateway.url as string;
    // An opened string that never closes, then nothing but ]]: the old parser tried every ]].
    const text = `[[tool:x "${"]]".repeat(49_500)}`;
    expect(text.length).toBeGreaterThanOrEqual(99_000);
    let answered = false;
    const latencies: number[] = [];
    const poll = (async () => {
      while (!answered) {
        const started = performance.now();
        const res = await fetch(`${base}/health`, { signal: AbortSignal.timeout(30_000) });
        await res.arrayBuffer();
        latencies.push(performance.now() - started);
        await new Promise((r) => setTimeout(r, 50));
      }
    })();
    const started = performance.now();
    const res = await fetch(`${base}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-session-id": "adversarial" },
      body: JSON.stringify({ model: "echo", messages: [{ role: "user", content: text }] }),
      signal: AbortSignal.timeout(60_000),
    });
    const elapsed = performance.now() - started;
    answered = true;
    await poll;
    expect(res.status, await res.clone().text()).toBe(200);
    // Time is what this checks: a parse that tries every ]] runs for minutes on this input and
    // holds the event loop meanwhile. Both bounds are far past a linear parse (milliseconds).
    expect(elapsed).toBeLessThan(10_000);
    expect(latencies.length).toBeGreaterThan(0);
    expect(Math.max(...latencies)).toBeLessThan(2_000);
  }, 90_000);
});
