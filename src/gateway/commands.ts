// Slash commands every platform shares: /new, /stop, /status, /help. They act at once, out of
// band of the session's queue (a /stop must not wait behind the turn it stops).

export type CommandName = "new" | "stop" | "status" | "help";

export function parseCommand(text: string): { name: CommandName; argument: string } | null {
  const match = /^\/(new|reset|stop|status|help)\b\s*(.*)$/is.exec(text.trim());
  if (!match) return null;
  const word = match[1].toLowerCase();
  const name: CommandName = word === "reset" ? "new" : (word as CommandName);
  return { name, argument: match[2].trim() };
}

export const HELP_TEXT = [
  "Commands:",
  "/new — start a fresh conversation (the old one stays in the history)",
  "/stop — stop the reply that is being written now",
  "/status — show this conversation's session and queue",
  "/help — this list",
].join("\n");
