// Inbound messages for tests.
import { randomUUID } from "node:crypto";
import type { InboundMessage } from "../../src/gateway/types.js";

export function inbound(chat: string, text: string, overrides: Partial<InboundMessage> = {}): InboundMessage {
  return {
    platform: "test",
    platformMessageId: randomUUID(),
    sessionKey: `test:${chat}`,
    chatId: chat,
    threadId: null,
    userId: "user-1",
    text,
    receivedAt: Date.now(),
    replyTarget: null,
    ...overrides,
  };
}
