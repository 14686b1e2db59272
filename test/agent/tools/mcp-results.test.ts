// What the model reads from MCP tool calls, and the names it sees them under.
import { ErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js";
import { describe, expect, it } from "vitest";
import { callFailure, resultText } from "../../../src/agent/tools/mcp/results.js";
import { offeredToolName } from "../../../src/agent/tools/mcp/tool-names.js";

describe("MCP tool results as text", () => {
  it("joins text blocks, describes binary ones and inlines embedded text resources", () => {
    const png = Buffer.alloc(2048).toString("base64");
    const text = resultText({
      content: [
        { type: "text", text: "two files" },
        { type: "image", data: png, mimeType: "image/png" },
        { type: "resource_link", uri: "file:///srv/a.txt", name: "a.txt" },
        { type: "resource", resource: { uri: "file:///srv/b.txt", mimeType: "text/plain", text: "hello from b" } },
        { type: "resource", resource: { uri: "file:///srv/c.bin", mimeType: "application/octet-stream", blob: Buffer.alloc(10).toString("base64") } },
      ],
    });
    expect(text.split("\n")).toEqual([
      "two files",
      "[image: image/png, 2.0 KB]",
      "[resource: file:///srv/a.txt (a.txt)]",
      "hello from b",
      "[resource: file:///srv/c.bin, application/octet-stream, 10 B]",
    ]);
  });

  it("falls back to the structured content, else nothing", () => {
    expect(resultText({ content: [], structuredContent: { temperature: 21 } })).toBe('{"temperature":21}');
    expect(resultText({ content: [] })).toBe("");
  });

  it("phrases timeouts, closed connections and server errors for the model", () => {
    expect(callFailure("files", new McpError(ErrorCode.RequestTimeout, "Request timed out"), 5000).message).toBe(
      'the tool did not answer within 5000 ms (MCP server "files")',
    );
    expect(callFailure("files", new McpError(ErrorCode.ConnectionClosed, "Connection closed"), 5000).message).toBe(
      'MCP server "files" closed the connection during the call',
    );
    expect(callFailure("files", new McpError(ErrorCode.InvalidParams, "Tool nope not found"), 5000).message).toBe('MCP server "files": Tool nope not found');
    expect(callFailure("files", new TypeError("fetch failed"), 5000).message).toBe('MCP server "files": fetch failed');
  });
});

describe("offered tool names", () => {
  it("prefixes the server, replaces what models refuse and stays within 64 characters", () => {
    expect(offeredToolName("files", "read_file")).toBe("files__read_file");
    expect(offeredToolName("gh", "repos/list.all")).toBe("gh__repos_list_all");
    const long = offeredToolName("search", "x".repeat(100));
    expect(long).toHaveLength(64);
    expect(long).toMatch(/^search__x+$/);
  });
});
