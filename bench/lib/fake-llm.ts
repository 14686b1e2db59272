// The fake model server (children/fake-llm.ts) seen from the runner: start it at a pace, read
// its calls by caller, and the environment that points a gateway process at it under a key of
// its own (the key is how the fake tells the processes apart).
import type { FakeLlmCommand, FakeLlmMessage } from "../children/fake-llm.js";
import { spawnChild } from "./child.js";
import type { ModelPace } from "./fake-llm-reply.js";

export interface FakeLlm {
  /** The base URL a client appends /chat/completions to. */
  url: string;
  pid: number;
  pace: ModelPace;
  /** Model calls since the start or the last reset, by caller key. */
  calls(): Promise<Record<string, number>>;
  /** Since the start or the last reset: each call's arrival and end (ms of process.hrtime), the fake's loop delay p99. */
  timings(): Promise<{ arrivedMs: number[]; endedMs: number[]; loopDelayP99Ms: number }>;
  reset(): void;
  stop(): Promise<void>;
}

export async function startFakeLlm(pace: ModelPace): Promise<FakeLlm> {
  const child = spawnChild<FakeLlmCommand, FakeLlmMessage>("fake-llm.ts", [String(pace.turnMs), String(pace.firstTokenShare), String(pace.chunks)]);
  try {
    const ready = await child.next((m): m is Extract<FakeLlmMessage, { type: "ready" }> => m.type === "ready", 60_000);
    const counts = async (): Promise<Extract<FakeLlmMessage, { type: "counts" }>> => {
      const reply = child.next((m): m is Extract<FakeLlmMessage, { type: "counts" }> => m.type === "counts", 10_000);
      child.send({ type: "counts" });
      return reply;
    };
    return {
      url: ready.url,
      pid: child.pid,
      pace,
      calls: async () => (await counts()).calls,
      timings: async () => {
        const { arrivedMs, endedMs, loopDelayP99Ms } = await counts();
        return { arrivedMs, endedMs, loopDelayP99Ms };
      },
      reset: () => child.send({ type: "reset" }),
      stop: () => child.stop(),
    };
  } catch (err) {
    await child.stop();
    throw err;
  }
}

/** A gateway process's model settings: the fake, under the key `caller`. */
export function llmEnv(fake: FakeLlm, caller: string): Record<string, string> {
  return { LLM_BASE_URL: fake.url, LLM_API_KEY: caller, LLM_MODEL: "fake-model" };
}
