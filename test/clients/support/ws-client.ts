// A WebSocket test client: collects every frame and waits, with a deadline, for the one wanted.
import WebSocket from "ws";

export interface ServerFrame {
  type: string;
  id?: string;
  session_id?: string;
  kind?: string;
  data?: Record<string, unknown>;
  ts?: number;
  code?: string;
  message?: string;
  status?: string;
  client_message_id?: string;
}

export class WsTestClient {
  readonly frames: ServerFrame[] = [];
  private readonly waiters = new Set<() => void>();

  private constructor(private readonly ws: WebSocket) {
    ws.on("message", (data) => {
      this.frames.push(JSON.parse(String(data)) as ServerFrame);
      for (const waiter of [...this.waiters]) waiter();
    });
  }

  static async connect(url: string, token: string | null, timeoutMs = 5000): Promise<WsTestClient> {
    const ws = new WebSocket(url, token ? { headers: { authorization: `Bearer ${token}` } } : {});
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error("websocket did not open in time")), timeoutMs);
      ws.once("open", () => {
        clearTimeout(timer);
        resolve();
      });
      ws.once("error", (err) => {
        clearTimeout(timer);
        reject(err);
      });
    });
    return new WsTestClient(ws);
  }

  send(frame: Record<string, unknown>): void {
    this.ws.send(JSON.stringify(frame));
  }

  /** Events of one session, in arrival order. */
  events(sessionId: string): ServerFrame[] {
    return this.frames.filter((f) => f.type === "event" && f.session_id === sessionId);
  }

  /** The first frame (from index `from` on) that matches, waiting up to `timeoutMs`. */
  waitFor(predicate: (frame: ServerFrame) => boolean, timeoutMs = 10_000, what = "a frame", from = 0): Promise<ServerFrame> {
    const find = (): ServerFrame | undefined => this.frames.slice(from).find(predicate);
    const found = find();
    if (found) return Promise.resolve(found);
    return new Promise((resolve, reject) => {
      const check = (): void => {
        const frame = find();
        if (!frame) return;
        cleanup();
        resolve(frame);
      };
      const timer = setTimeout(() => {
        cleanup();
        reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}; got ${JSON.stringify(this.frames.map((f) => f.kind ?? f.type))}`));
      }, timeoutMs);
      const cleanup = (): void => {
        clearTimeout(timer);
        this.waiters.delete(check);
      };
      this.waiters.add(check);
    });
  }

  async subscribe(sessionId: string, since?: string): Promise<void> {
    const from = this.frames.length;
    this.send({ type: "subscribe", session_id: sessionId, ...(since ? { since } : {}) });
    await this.waitFor((f) => f.type === "subscribed" && f.session_id === sessionId, 5000, `subscribed ${sessionId}`, from);
  }

  async close(): Promise<void> {
    if (this.ws.readyState === WebSocket.CLOSED) return;
    await new Promise<void>((resolve) => {
      this.ws.once("close", () => resolve());
      this.ws.close();
    });
  }
}
