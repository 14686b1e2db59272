// Runs only in CI's second pass (.ci/run), where REDIS_URL and DATABASE_URL are unset: the run
// must have started its own redis-server and PostgreSQL, and both must answer. In the main pass,
// which uses the machine's servers, it is skipped.
import pg from "pg";
import { describe, expect, it } from "vitest";
import { newRedisClient } from "../support/redis.js";
import { testDatabaseUrl } from "../support/postgres.js";

const expected = process.env.SWITCHBOARD_EXPECT_PRIVATE_SERVICES === "1";

describe.runIf(expected)("a run with nothing set", () => {
  it("started a private redis-server and a private PostgreSQL", () => {
    const started = (process.env.SWITCHBOARD_TEST_PRIVATE_SERVICES ?? "").split(",");
    expect(started).toContain("redis");
    expect(started).toContain("postgres");
  });

  it("reaches the private redis-server", async () => {
    const redis = newRedisClient();
    try {
      expect(await redis.ping()).toBe("PONG");
    } finally {
      redis.disconnect();
    }
  });

  it("reaches the private PostgreSQL over its unix socket", async () => {
    const url = testDatabaseUrl();
    expect(url).toMatch(/[?&]host=%2F|[?&]host=\//);
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      const { rows } = await client.query<{ one: number }>("SELECT 1 AS one");
      expect(rows[0]?.one).toBe(1);
    } finally {
      await client.end();
    }
  });
});
