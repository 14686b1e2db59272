// The WebSocket platform as a PlatformAdapter. Clients read replies from the turn's events
// (turn.completed carries final_response), so sending a reply has nothing left to do.
import type { PlatformAdapter, SendResult } from "../../gateway/types.js";
import { WEBSOCKET_PLATFORM } from "./inbound.js";

export function createWebSocketAdapter(): PlatformAdapter {
  return {
    platform: WEBSOCKET_PLATFORM,
    capabilities: { threads: false, edits: false, streaming: true, typing: false },
    async send(): Promise<SendResult> {
      return { platformMessageId: null };
    },
  };
}
