// What of an MCP server's trouble may be shown: credentials in URLs, auth headers, key=value
// secrets and long tokens are masked; the rest of the reason stays readable.
import { describe, expect, it } from "vitest";
import { redactSecrets } from "../../../src/agent/tools/mcp/redact.js";

describe("redactSecrets", () => {
  it.each([
    ["fetch http://user:hunter2@tools.example.com/mcp failed", "fetch http://***@tools.example.com/mcp failed"],
    ["GET https://tools.example.com/mcp?api_key=abc&region=eu", "GET https://tools.example.com/mcp?api_key=***&region=***"],
    ["Authorization: Bearer abc.def.ghi", "Authorization: Bearer ***"],
    ["MCP_TOKEN=xyz refused", "MCP_TOKEN=*** refused"],
    ['{"password": "hunter2"}', '{"password": "***"}'],
    ["using ghp_16C7e42F292c6912E7710c838347Ae178B4a", "using ***"],
    ["missing API token", "missing API token"],
    ["cannot find module /srv/tools/index.js", "cannot find module /srv/tools/index.js"],
  ])("%s", (text, shown) => {
    expect(redactSecrets(text)).toBe(shown);
  });
});
