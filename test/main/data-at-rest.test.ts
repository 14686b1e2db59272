// Data at rest: a running gateway's data folder is 0700 and its SQLite files (database, -wal,
// -shm) are 0600, whether it creates them or finds them with wider modes (then it tightens them
// and says so once).
import { chmodSync, existsSync, mkdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { Writable } from "node:stream";
import Database from "better-sqlite3";
import { pino, type Logger } from "pino";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { startTestGateway, type TestGateway } from "../support/gateway.js";
import { makeTempDir } from "../support/tmp.js";

const mode = (path: string): number => statSync(path).mode & 0o777;

function capturingLogger(): { logger: Logger; messages: () => Array<{ msg: string; path?: string }> } {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(...chunk.toString().split("\n").filter(Boolean));
      done();
    },
  });
  return { logger: pino({ level: "info" }, stream), messages: () => lines.map((l) => JSON.parse(l) as { msg: string; path?: string }) };
}

describe.skipIf(process.platform === "win32")("data at rest", () => {
  const temp = makeTempDir("sb-at-rest");
  afterAll(() => temp.cleanup());
  let gw: TestGateway | null = null;

  afterEach(async () => {
    await gw?.stop();
    gw = null;
  });

  const start = (dataDir: string, logger?: Logger): Promise<TestGateway> =>
    startTestGateway({ workers: false, logger, env: { SWITCHBOARD_DATA_DIR: dataDir, SWITCHBOARD_DB: join(dataDir, "switchboard.db") } });

  it("creates the data folder 0700 and the database, -wal and -shm files 0600", async () => {
    const dataDir = join(temp.dir, "fresh", "data");
    gw = await start(dataDir);
    await gw.gateway.store.createSession("at-rest", { source: "api" });
    const db = join(dataDir, "switchboard.db");
    expect(mode(dataDir).toString(8)).toBe("700");
    expect(mode(join(temp.dir, "fresh")).toString(8)).toBe("700");
    for (const file of [db, `${db}-wal`, `${db}-shm`]) {
      expect(existsSync(file), file).toBe(true);
      expect(mode(file).toString(8), file).toBe("600");
    }
  });

  it("tightens an existing folder and files with wider modes, and logs it once", async () => {
    const dataDir = join(temp.dir, "existing");
    mkdirSync(dataDir, { mode: 0o755 });
    chmodSync(dataDir, 0o755);
    const db = join(dataDir, "switchboard.db");
    // A database left by an older version, open in another process so its -wal and -shm stay.
    const other = new Database(db);
    other.pragma("journal_mode = WAL");
    other.exec("CREATE TABLE IF NOT EXISTS leftover (x)");
    try {
      for (const file of [db, `${db}-wal`, `${db}-shm`]) chmodSync(file, 0o644);
      const first = capturingLogger();
      gw = await start(dataDir, first.logger);
      expect(mode(dataDir).toString(8)).toBe("700");
      for (const file of [db, `${db}-wal`, `${db}-shm`]) expect(mode(file).toString(8), file).toBe("600");
      const tightened = first.messages().filter((m) => /tightened/.test(m.msg));
      expect(tightened.map((m) => m.path).sort()).toEqual([dataDir, db, `${db}-shm`, `${db}-wal`].sort());
      await gw.stop();
      gw = null;

      const second = capturingLogger();
      gw = await start(dataDir, second.logger);
      expect(second.messages().filter((m) => /tightened/.test(m.msg))).toEqual([]);
    } finally {
      other.close();
    }
  });
});
