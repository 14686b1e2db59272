// The state layer's public surface.
export { SessionDB, type SessionDBOptions } from "./session-db.js";
export { TurnLeaseLostError, UnknownSessionError, SessionDBClosedError } from "./errors.js";
export { makeHolder, parseHolder, thisHost, type MakeHolderInput, type ParsedHolder } from "./holder.js";
export { busyRetryStats, isSqliteBusy } from "./busy-retry.js";
export { writeGateStats } from "./write-gate.js";
export { repairToolPairing } from "./conversation.js";
export { COMPRESSION_END_REASON } from "./sessions.js";
export { ensurePrivateDir, type OnTightened } from "./private-files.js";
export * from "./types.js";
export { PostgresStore, type PostgresStoreOptions } from "./postgres/postgres-store.js";
export { openStore, describeStore, isPostgresUrl, type StoreConfig, type OpenStoreOptions } from "./open-store.js";
export { DEFAULT_POOL_SIZE, type StoreOptions } from "./store-options.js";
