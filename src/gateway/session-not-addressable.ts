// Thrown by the ingress when a client addresses, by id, a session another platform created
// (InboundMessage.sessionSources): the client turns it into its own refusal.
export class SessionNotAddressableError extends Error {
  constructor(
    readonly sessionId: string,
    readonly source: string,
  ) {
    super(`session ${sessionId} belongs to the ${source} platform; send to sessions of the API or WebSocket only`);
    this.name = "SessionNotAddressableError";
  }
}
