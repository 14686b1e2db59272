// Slack slash commands (form-encoded) mapped to the gateway's text commands.
//
// `/stop`, `/new`, `/status`, `/help` become that text; an app command such as
// `/switchboard stop` becomes `/stop` when its first word is one of those, and otherwise its text
// is an ordinary prompt. A command addresses the channel's (or DM's) top-level session
// `slack:<team>:<channel>`: Slack does not say which thread a command was typed in.
import type { InboundMessage } from "../../gateway/types.js";

export const GATEWAY_COMMANDS = ["stop", "new", "status", "help"] as const;
const COMMAND_SET = new Set<string>(GATEWAY_COMMANDS);

export type SlackCommandDecision = { kind: "accept"; message: InboundMessage } | { kind: "invalid"; reason: string };

export function commandText(command: string, text: string): string {
  const name = command.replace(/^\//, "").toLowerCase();
  const args = text.trim();
  if (COMMAND_SET.has(name)) return args ? `/${name} ${args}` : `/${name}`;
  const [first = "", ...rest] = args.split(/\s+/);
  const sub = first.replace(/^\//, "").toLowerCase();
  if (COMMAND_SET.has(sub)) return rest.length ? `/${sub} ${rest.join(" ")}` : `/${sub}`;
  return args;
}

export function normaliseSlackCommand(form: URLSearchParams, now: number): SlackCommandDecision {
  const command = form.get("command");
  const team = form.get("team_id");
  const channel = form.get("channel_id");
  const user = form.get("user_id");
  const triggerId = form.get("trigger_id");
  if (!command || !team || !channel || !user || !triggerId) {
    return { kind: "invalid", reason: "slash command needs command, team_id, channel_id, user_id and trigger_id" };
  }
  const text = commandText(command, form.get("text") ?? "");
  if (text === "") return { kind: "invalid", reason: "empty command" };
  const message: InboundMessage = {
    platform: "slack",
    // trigger_id is unique per invocation; Slack does not retry slash commands.
    platformMessageId: `command:${triggerId}`,
    sessionKey: `slack:${team}:${channel}`,
    chatId: channel,
    threadId: null,
    userId: user,
    workspaceId: team,
    text,
    displayKind: "slack_command",
    displayMetadata: {
      team,
      channel,
      channel_name: form.get("channel_name"),
      user,
      user_name: form.get("user_name"),
      command,
    },
    receivedAt: now,
    replyTarget: { team, channel },
  };
  return { kind: "accept", message };
}
