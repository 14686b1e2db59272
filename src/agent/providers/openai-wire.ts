// Our model messages and tools in the shapes the chat completions API takes.
import type {
  ChatCompletionFunctionTool,
  ChatCompletionMessageParam,
} from "openai/resources/chat/completions";
import type { ModelMessage, ToolSpec } from "../types.js";

export function toOpenAIMessages(messages: ModelMessage[]): ChatCompletionMessageParam[] {
  return messages.map(toOpenAIMessage);
}

function toOpenAIMessage(message: ModelMessage): ChatCompletionMessageParam {
  const name = message.name ? { name: message.name } : {};
  switch (message.role) {
    case "system":
      return { role: "system", content: message.content ?? "", ...name };
    case "user":
      return { role: "user", content: message.content ?? "", ...name };
    case "tool":
      return { role: "tool", content: message.content ?? "", tool_call_id: message.tool_call_id ?? "" };
    case "assistant": {
      const toolCalls = message.tool_calls ?? [];
      if (toolCalls.length === 0) return { role: "assistant", content: message.content ?? "", ...name };
      return {
        role: "assistant",
        content: message.content,
        ...name,
        tool_calls: toolCalls.map((call) => ({
          id: call.id,
          type: "function" as const,
          function: { name: call.function.name, arguments: call.function.arguments },
        })),
      };
    }
  }
}

export function toOpenAITools(tools: ToolSpec[]): ChatCompletionFunctionTool[] {
  return tools.map((tool) => ({
    type: "function",
    function: { name: tool.name, description: tool.description, parameters: tool.parameters },
  }));
}
