// The sessions a client (API, WebSocket) may write to by id: those the API or the WebSocket
// created, never a chat platform's (the ingress checks a session's source against this list).
export const CLIENT_SESSION_SOURCES: readonly string[] = ["api", "websocket"];
