// The state layer's public surface.
export { SessionDB, type SessionDBOptions } from "./session-db.js";
export { TurnLeaseLostError, UnknownSessionError, SessionDBClosedError } from "./errors.js";
export { makeHolder, parseHolder, thisHost, type MakeHolderInput, type ParsedHolder } from "./holder.js";
export { isSqliteBusy } from "./busy-retry.js";
export { repairToolPairing } from "./conversation.js";
export { COMPRESSION_END_REASON } from "./sessions.js";
export * from "./types.js";
