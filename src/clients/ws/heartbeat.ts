// Ping every client each interval; one that has not answered the previous ping is terminated.
import type { HubClient } from "./client.js";

export function startHeartbeat(clients: () => Iterable<HubClient>, intervalMs: number): () => void {
  const timer = setInterval(() => {
    for (const client of clients()) {
      if (!client.alive) {
        client.terminate();
        continue;
      }
      client.alive = false;
      try {
        client.socket.ping();
      } catch {
        client.terminate();
      }
    }
  }, intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}
