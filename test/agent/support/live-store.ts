// A real store for agent tests: a backend's fresh database (see ../../support/store-backends.ts).
// SQLite unless a test runs on every backend (`describe.each(storeBackends)`).
import { sqliteBackend, type StoreBackend, type TestStore } from "../../support/store-backends.js";

export type LiveStore = TestStore;

export function liveStore(backend: StoreBackend = sqliteBackend, label = "agent"): LiveStore {
  return backend.create(label);
}
