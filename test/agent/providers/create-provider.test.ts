// Choosing the provider from config: echo offline, OpenAI-compatible with a base URL.
import { afterEach, describe, expect, it } from "vitest";
import { createProvider, EchoProvider } from "../../../src/agent/providers/index.js";
import { OpenAIProvider } from "../../../src/agent/providers/openai.js";
import { startFakeOpenAI, type FakeOpenAI } from "../../support/fake-openai.js";

describe("createProvider", () => {
  let fake: FakeOpenAI | undefined;
  afterEach(async () => {
    await fake?.close();
    fake = undefined;
  });

  it("is the offline echo model when no base URL is set", async () => {
    const provider = await createProvider({ apiKey: "ignored", model: "ignored", echoChunkDelayMs: 0 });
    expect(provider).toBeInstanceOf(EchoProvider);
    expect(provider.model).toBe("echo");
    const result = await provider.complete({ messages: [{ role: "user", content: "ping" }], signal: new AbortController().signal });
    expect(result.content).toBe("Echo: ping");
  });

  it("talks to the configured OpenAI-compatible server when a base URL is set", async () => {
    fake = await startFakeOpenAI({ apiKey: "sk-config" });
    const provider = await createProvider({ baseUrl: fake.url, apiKey: "sk-config", model: "fake-model" });
    expect(provider).toBeInstanceOf(OpenAIProvider);
    expect(provider.model).toBe("fake-model");
    const result = await provider.complete({ messages: [{ role: "user", content: "over the wire" }], signal: new AbortController().signal });
    expect(result.content).toBe("Echo: over the wire");
    expect(fake.completionRequests()).toHaveLength(1);
  });

  it("names the missing model setting", async () => {
    await expect(createProvider({ baseUrl: "http://127.0.0.1:1/v1" })).rejects.toThrow(/LLM_MODEL/);
  });
});
