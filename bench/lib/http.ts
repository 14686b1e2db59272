// A lean HTTP client for load generation: node:http with a keep-alive pool, so the client spends
// as little of the shared CPU as possible.
import { Agent, request } from "node:http";

export interface HttpResponse {
  status: number;
  body: string;
}

/**
 * `idleMs`: close a pooled connection after this long unused, well before the server's own
 * keep-alive timeout (Node's: 5 s), so a request never goes out on a connection the server is
 * closing (ECONNRESET) even when a busy machine delays the client's timers.
 */
export function keepAliveAgent(maxSockets: number, idleMs?: number): Agent {
  return new Agent({ keepAlive: true, maxSockets, maxFreeSockets: maxSockets, ...(idleMs !== undefined ? { timeout: idleMs } : {}) });
}

export function httpRequest(
  url: string,
  options: { method?: string; headers?: Record<string, string>; body?: string | Buffer; agent?: Agent; timeoutMs?: number },
): Promise<HttpResponse> {
  return new Promise<HttpResponse>((resolve, reject) => {
    const req = request(url, { method: options.method ?? "GET", headers: options.headers, agent: options.agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString("utf8") }));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.setTimeout(options.timeoutMs ?? 180_000, () => req.destroy(new Error(`request to ${url} timed out`)));
    req.end(options.body);
  });
}
