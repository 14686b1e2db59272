// A server-sent events response: JSON `data:` lines, comment keep-alives while a turn waits for
// its session (proxies close idle connections), and `data: [DONE]` at the end.
import type { ServerResponse } from "node:http";

const KEEP_ALIVE_MS = 15_000;

export class SseWriter {
  private keepAlive: NodeJS.Timeout | null = null;
  private closed = false;
  /** Resolves when the client goes away before we ended the stream. */
  readonly disconnected: Promise<void>;

  constructor(private readonly res: ServerResponse) {
    this.disconnected = new Promise((resolve) => {
      res.on("close", () => {
        if (!this.closed) {
          this.closed = true;
          this.stopKeepAlive();
          resolve();
        }
      });
    });
  }

  get isOpen(): boolean {
    return !this.closed;
  }

  start(headers: Record<string, string>): void {
    this.res.statusCode = 200;
    this.res.setHeader("Content-Type", "text/event-stream; charset=utf-8");
    this.res.setHeader("Cache-Control", "no-cache, no-transform");
    this.res.setHeader("Connection", "keep-alive");
    this.res.setHeader("X-Accel-Buffering", "no");
    for (const [name, value] of Object.entries(headers)) this.res.setHeader(name, value);
    this.res.flushHeaders();
    this.keepAlive = setInterval(() => this.write(": keep-alive\n\n"), KEEP_ALIVE_MS);
    this.keepAlive.unref();
  }

  send(payload: unknown): void {
    this.write(`data: ${JSON.stringify(payload)}\n\n`);
  }

  /** `data: [DONE]` and the end of the response. */
  end(): void {
    this.write("data: [DONE]\n\n");
    this.closed = true;
    this.stopKeepAlive();
    this.res.end();
  }

  private write(text: string): void {
    if (!this.closed) this.res.write(text);
  }

  private stopKeepAlive(): void {
    if (this.keepAlive) clearInterval(this.keepAlive);
    this.keepAlive = null;
  }
}
