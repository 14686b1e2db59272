// The names the model sees: `<server>__<tool>`, within what chat-completion APIs accept.

const MAX_TOOL_NAME = 64;
const SEPARATOR = "__";

/** `<server>__<tool>`; characters models refuse become '_', and the name is cut to 64. */
export function offeredToolName(server: string, tool: string): string {
  return `${server}${SEPARATOR}${tool.replace(/[^A-Za-z0-9_-]/g, "_")}`.slice(0, MAX_TOOL_NAME);
}
