// A WebSocket `send` frame becomes an InboundMessage: platform 'websocket', the client-addressed
// session, and the client's message id as the platform message id (so a resend is a duplicate).
import { randomUUID } from "node:crypto";
import type { AcceptResult, GatewayIngress, InboundMessage } from "../../gateway/types.js";
import { CLIENT_SESSION_SOURCES } from "../client-sessions.js";

export const WEBSOCKET_PLATFORM = "websocket";

export interface SendRequest {
  session_id: string;
  text: string;
  client_message_id?: string;
}

export function inboundFromSend(request: SendRequest, clientMessageId: string, receivedAt = Date.now()): InboundMessage {
  return {
    platform: WEBSOCKET_PLATFORM,
    // Scoped to the session: two clients may both number their messages from 1.
    platformMessageId: `${request.session_id}:${clientMessageId}`,
    sessionKey: `${WEBSOCKET_PLATFORM}:${request.session_id}`,
    sessionId: request.session_id,
    sessionSources: CLIENT_SESSION_SOURCES,
    chatId: request.session_id,
    threadId: null,
    userId: null,
    text: request.text,
    attachments: [],
    displayKind: null,
    displayMetadata: null,
    receivedAt,
    // The reply reaches the client as the turn's events on this session.
    replyTarget: { session_id: request.session_id },
  };
}

export interface SendOutcome {
  clientMessageId: string;
  result: AcceptResult;
}

/** Hand a `send` to the gateway; a client that gave no message id gets a generated one. */
export async function acceptSend(ingress: GatewayIngress, request: SendRequest): Promise<SendOutcome> {
  const clientMessageId = request.client_message_id ?? randomUUID();
  const result = await ingress.accept(inboundFromSend(request, clientMessageId));
  return { clientMessageId, result };
}
