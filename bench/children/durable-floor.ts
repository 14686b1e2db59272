// The throughput benchmark's second baseline: the least any durable chat gateway must do per
// message, in one process like the gateway. node:http (no framework), one SQLite row recorded
// before the job is added (WAL, synchronous=NORMAL, as the gateway), a BullMQ job on the
// gateway's queue settings, an in-process Worker at the same concurrency whose processor marks
// the row answered, then the JSON answer. No transcript, lease, events or auth: what is left of
// the gateway's cost is what those cost.
// argv: redisUrl prefix concurrency dbPath
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import Database from "better-sqlite3";
import { Queue, Worker } from "bullmq";
import { Redis } from "ioredis";
import { TURN_QUEUE, turnJobId, workerConnection } from "../../src/gateway/queues.js";
import { redisOptionsFromUrl } from "../../src/bus/redis-url.js";
import { toParent } from "../lib/child.js";

export type DurableFloorMessage = { type: "ready"; url: string } | { type: "error"; message: string };

interface FloorJob {
  inboxId: number;
  text: string;
}

const [redisUrl, prefix, concurrencyArg, dbPath] = process.argv.slice(2);
const redisOptions = redisOptionsFromUrl(redisUrl);

const db = new Database(dbPath);
db.pragma("journal_mode = WAL");
db.pragma("synchronous = NORMAL");
db.exec(`CREATE TABLE IF NOT EXISTS inbox (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  platform_message_id TEXT NOT NULL UNIQUE,
  session_id TEXT NOT NULL,
  payload TEXT NOT NULL,
  status TEXT NOT NULL,
  reply TEXT
)`);
const record = db.prepare<[string, string, string], { id: number }>(
  "INSERT INTO inbox (platform_message_id, session_id, payload, status) VALUES (?, ?, ?, 'pending') RETURNING id",
);
const answer = db.prepare<[string, number]>("UPDATE inbox SET status = 'done', reply = ? WHERE id = ?");

// Auto-pipelined, like the gateway's command connection: concurrent adds share socket writes.
const connection = new Redis({ ...redisOptions, maxRetriesPerRequest: null, enableAutoPipelining: true });
const queue = new Queue<FloorJob>(TURN_QUEUE, {
  connection,
  prefix,
  defaultJobOptions: { removeOnComplete: true, removeOnFail: 1000, attempts: 20, backoff: { type: "exponential", delay: 1000 } },
});
const waiting = new Map<number, (reply: string) => void>();
const worker = new Worker<FloorJob>(
  TURN_QUEUE,
  async (job) => {
    const reply = `echo: ${job.data.text}`;
    answer.run(reply, job.data.inboxId);
    waiting.get(job.data.inboxId)?.(reply);
    waiting.delete(job.data.inboxId);
  },
  { connection: workerConnection(redisOptions), prefix, concurrency: Number(concurrencyArg), lockDuration: 15_000, stalledInterval: 5_000, maxStalledCount: 5 },
);
worker.on("error", (err) => console.error(`durable floor worker: ${err.message}`));

let received = 0;

async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const raw = Buffer.concat(chunks).toString("utf8");
  const body = JSON.parse(raw) as { messages: Array<{ content: string }> };
  const text = body.messages[body.messages.length - 1].content;
  const { id } = record.get(`floor-${process.pid}-${received++}`, String(req.headers["x-session-id"] ?? ""), raw) as { id: number };
  const replied = new Promise<string>((resolve) => waiting.set(id, resolve));
  await queue.add("turn", { inboxId: id, text }, { jobId: turnJobId(id) });
  const content = await replied;
  res.writeHead(200, { "content-type": "application/json" });
  res.end(JSON.stringify({ object: "chat.completion", choices: [{ index: 0, message: { role: "assistant", content }, finish_reason: "stop" }] }));
}

const server = createServer((req, res) => {
  handle(req, res).catch((err: Error) => {
    res.writeHead(500, { "content-type": "application/json" });
    res.end(JSON.stringify({ error: { message: err.message } }));
  });
});

await Promise.all([queue.waitUntilReady(), worker.waitUntilReady()]);
server.listen(0, "127.0.0.1", () => {
  const { port } = server.address() as AddressInfo;
  toParent<DurableFloorMessage>({ type: "ready", url: `http://127.0.0.1:${port}` });
});

process.on("SIGTERM", () => {
  server.close();
  server.closeAllConnections();
  void Promise.all([worker.close(), queue.close()]).finally(() => {
    connection.disconnect();
    db.close();
    process.exit(0);
  });
});
