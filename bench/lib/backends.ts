// The two stores a benchmark can run on: the embedded SQLite file and the run's PostgreSQL.
import { join } from "node:path";
import { openStore, type SessionStore } from "../../src/state/index.js";
import type { OpenStoreOptions } from "../../src/state/open-store.js";
import type { BenchContext } from "./result.js";

export type Backend = "sqlite" | "pg";

export const BACKENDS: readonly Backend[] = ["sqlite", "pg"];

export const BACKEND_NAMES: Record<Backend, string> = { sqlite: "SQLite", pg: "PostgreSQL" };

/** Where a measurement's store lives: a file in the run's folder, or a schema of its own. */
export interface StoreTarget {
  backend: Backend;
  /** The SQLite path, or the PostgreSQL URL. */
  location: string;
  /** PostgreSQL only. */
  schema: string;
}

export async function storeTarget(ctx: BenchContext, backend: Backend, label: string): Promise<StoreTarget> {
  if (backend === "sqlite") return { backend, location: join(ctx.workDir, `${label}.db`), schema: "" };
  const postgres = await ctx.postgres();
  return { backend, location: postgres.url, schema: postgres.schema(label) };
}

export function openTarget(target: StoreTarget, options: OpenStoreOptions = {}): Promise<SessionStore> {
  const pg = target.backend === "pg";
  return openStore({ databaseUrl: pg ? target.location : null, databaseSchema: target.schema, dbPath: pg ? "" : target.location }, options);
}
