// A real SessionDB on a fresh SQLite file in a temp folder.
import { join } from "node:path";
import { SessionDB, type SessionDBOptions } from "../../../src/state/index.js";
import { makeTempDir } from "../../support/tmp.js";

export interface LiveStore {
  path: string;
  open(options?: SessionDBOptions): SessionDB;
  /** Close every SessionDB opened here and remove the folder. */
  cleanup(): Promise<void>;
}

export function liveStore(label = "sb-agent"): LiveStore {
  const temp = makeTempDir(label);
  const path = join(temp.dir, "state.db");
  const opened: SessionDB[] = [];
  return {
    path,
    open(options) {
      const db = new SessionDB(path, options);
      opened.push(db);
      return db;
    },
    async cleanup() {
      for (const db of opened) await db.close().catch(() => {});
      temp.cleanup();
    },
  };
}
