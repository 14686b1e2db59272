// Our model messages and tools in the shapes the chat completions API takes.
import type {
  ChatCompletionContentPart,
  ChatCompletionFunctionTool,
  ChatCompletionMessageParam,
} from "openai/resources/chat/completions";
import type { ModelImage, ModelMessage, ToolSpec } from "../types.js";

export function toOpenAIMessages(messages: ModelMessage[]): ChatCompletionMessageParam[] {
  return messages.map(toOpenAIMessage);
}

function toOpenAIMessage(message: ModelMessage): ChatCompletionMessageParam {
  const name = message.name ? { name: message.name } : {};
  switch (message.role) {
    case "system":
      return { role: "system", content: message.content ?? "", ...name };
    case "user":
      if (message.images?.length) return { role: "user", content: userParts(message.content ?? "", message.images), ...name };
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

/** The text, then each image as an `image_url` part with a data URL. */
function userParts(text: string, images: ModelImage[]): ChatCompletionContentPart[] {
  const parts: ChatCompletionContentPart[] = [];
  if (text !== "") parts.push({ type: "text", text });
  for (const image of images) parts.push({ type: "image_url", image_url: { url: dataUrl(image) } });
  return parts;
}

export function dataUrl(image: ModelImage): string {
  return `data:${image.contentType};base64,${Buffer.from(image.data.buffer, image.data.byteOffset, image.data.byteLength).toString("base64")}`;
}

export function toOpenAITools(tools: ToolSpec[]): ChatCompletionFunctionTool[] {
  return tools.map((tool) => ({
    type: "function",
    function: { name: tool.name, description: tool.description, parameters: tool.parameters },
  }));
}
