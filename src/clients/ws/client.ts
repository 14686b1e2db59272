// One connected client: sends with a backpressure bound, handles its frames one at a time in
// arrival order (a subscribe is in place before a later unsubscribe runs), and answers pings.
import type { Logger } from "pino";
import { WebSocket } from "ws";
import { errorFrame, frameError, type FrameError } from "./frames.js";

export interface HubClientOptions {
  /** A client whose unsent bytes exceed this is dropped (it reconnects with `since`). */
  maxBufferedBytes: number;
  /** Frames waiting to be handled; beyond this a frame is refused with `busy`. */
  maxQueuedFrames: number;
  logger: Logger;
}

let nextClientId = 1;

export class HubClient {
  readonly id = nextClientId++;
  /** Sessions this client is subscribed to. */
  readonly sessions = new Set<string>();
  /** Cleared by each heartbeat, set again by the client's pong. */
  alive = true;
  private queue: Promise<void> = Promise.resolve();
  private queued = 0;
  private dropped = false;

  constructor(
    readonly socket: WebSocket,
    private readonly options: HubClientOptions,
  ) {
    socket.on("pong", () => {
      this.alive = true;
    });
  }

  get open(): boolean {
    return this.socket.readyState === WebSocket.OPEN && !this.dropped;
  }

  /** Send a text frame (a Buffer is sent as text too, without copying, for shared event frames). */
  send(data: string | Buffer): void {
    if (!this.open) return;
    if (this.socket.bufferedAmount > this.options.maxBufferedBytes) {
      this.dropSlowConsumer();
      return;
    }
    this.socket.send(data, { binary: false });
  }

  sendErrorFrame(error: FrameError, context: { session_id?: string; client_message_id?: string } = {}): void {
    this.send(errorFrame(error, context));
  }

  /** Run `task` after every frame that arrived before it. */
  enqueue(task: () => Promise<void> | void): void {
    if (this.queued >= this.options.maxQueuedFrames) {
      this.sendErrorFrame(frameError("busy"));
      return;
    }
    this.queued++;
    this.queue = this.queue
      .then(async () => {
        if (this.socket.readyState === WebSocket.OPEN) await task();
      })
      .catch((err: unknown) => {
        this.options.logger.error({ err, client: this.id }, "websocket frame handler failed");
        this.sendErrorFrame(frameError("internal"));
      })
      .finally(() => {
        this.queued--;
      });
  }

  terminate(): void {
    this.socket.terminate();
  }

  private dropSlowConsumer(): void {
    this.dropped = true;
    this.options.logger.warn(
      { client: this.id, bufferedBytes: this.socket.bufferedAmount },
      "websocket client dropped: it does not read its events fast enough",
    );
    this.socket.terminate();
  }
}
