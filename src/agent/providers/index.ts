// Chooses the model provider from config: an OpenAI-compatible server when a base URL is set,
// else the offline echo model. The openai client is loaded only for the former (import
// OpenAIProvider from ./openai.js): a process on the echo model does not hold it in memory.
import type { ModelProvider } from "../types.js";
import { EchoProvider } from "./echo.js";

export interface ProviderConfig {
  baseUrl?: string;
  apiKey?: string;
  model?: string;
  echoChunkDelayMs?: number;
  echoToolDirectives?: boolean;
  maxRetries?: number;
  timeoutMs?: number;
  temperature?: number;
}

export async function createProvider(config: ProviderConfig): Promise<ModelProvider> {
  if (!config.baseUrl) return new EchoProvider({ chunkDelayMs: config.echoChunkDelayMs, toolDirectives: config.echoToolDirectives });
  if (!config.model) throw new Error("A model name (LLM_MODEL) is required when a model server URL (LLM_BASE_URL) is set");
  const { OpenAIProvider } = await import("./openai.js");
  return new OpenAIProvider({
    baseURL: config.baseUrl,
    // Local servers often need no key; the client insists on one, and sends it as a bearer token.
    apiKey: config.apiKey || "none",
    model: config.model,
    maxRetries: config.maxRetries,
    timeoutMs: config.timeoutMs,
    temperature: config.temperature,
  });
}

export { EchoProvider, wordChunks, type EchoProviderOptions } from "./echo.js";
export type { OpenAIProviderOptions } from "./openai.js";
export { ProviderAbortError, ProviderError, isAbortError, type ProviderErrorOptions } from "./errors.js";
export { parseToolDirectives, type DirectiveCall, type ParsedDirectives } from "./echo-directive.js";
