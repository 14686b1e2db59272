// What the model reads from an MCP tool call: its content blocks as text, or the error a failed
// call becomes. The model gets text only, so binary blocks are described, not inlined.
import { ErrorCode, McpError, type CallToolResult, type ContentBlock } from "@modelcontextprotocol/sdk/types.js";
import { redactSecrets } from "./redact.js";

function sizeOfBase64(data: string): string {
  const padding = data.endsWith("==") ? 2 : data.endsWith("=") ? 1 : 0;
  const bytes = Math.floor((data.length * 3) / 4) - padding;
  return bytes < 1024 ? `${bytes} B` : `${(bytes / 1024).toFixed(1)} KB`;
}

function blockText(block: ContentBlock): string {
  switch (block.type) {
    case "text":
      return block.text;
    case "image":
    case "audio":
      return `[${block.type}: ${block.mimeType}, ${sizeOfBase64(block.data)}]`;
    case "resource_link":
      return `[resource: ${block.uri}${block.name ? ` (${block.name})` : ""}]`;
    case "resource":
      return "text" in block.resource
        ? block.resource.text
        : `[resource: ${block.resource.uri}${block.resource.mimeType ? `, ${block.resource.mimeType}` : ""}, ${sizeOfBase64(block.resource.blob)}]`;
  }
}

/** The result's text: its content blocks, else its structured content as JSON. */
export function resultText(result: CallToolResult): string {
  const blocks = result.content ?? [];
  if (blocks.length > 0) return blocks.map(blockText).join("\n");
  if (result.structuredContent !== undefined) return JSON.stringify(result.structuredContent);
  return "";
}

/** Why a call failed, phrased for the model (and the tool.finished event). */
export function callFailure(server: string, err: unknown, timeoutMs: number): Error {
  if (err instanceof McpError) {
    if (err.code === ErrorCode.RequestTimeout) return new Error(`the tool did not answer within ${timeoutMs} ms (MCP server "${server}")`);
    if (err.code === ErrorCode.ConnectionClosed) return new Error(`MCP server "${server}" closed the connection during the call`);
    return new Error(`MCP server "${server}": ${redactSecrets(err.message.replace(/^MCP error -?\d+: /, ""))}`);
  }
  // Transport errors may name the server's URL, credentials and all.
  return new Error(`MCP server "${server}": ${redactSecrets(err instanceof Error ? err.message : String(err))}`);
}
