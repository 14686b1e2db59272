// A load generator's HTTP/1.1 client on plain sockets: each request's bytes are built before the
// clock starts, a connection carries one request at a time (no pipelining, as a keep-alive agent
// does) and a response is read only as far as its status line and the end of its body
// (Content-Length or chunked). node:http's client spent about 0.35 ms of CPU per request in the
// ingress benchmark, taken from the two cores the server it measures runs on; this spends 0.2.
import { connect, type Socket } from "node:net";

export interface PreparedRequest {
  /** The whole request: request line, headers, body. */
  bytes: Buffer;
}

/** A POST of `body` to `path` with `headers` (Host, Content-Length and keep-alive are added). */
export function preparePost(url: URL, headers: Record<string, string>, body: string): PreparedRequest {
  const payload = Buffer.from(body, "utf8");
  const lines = [`POST ${url.pathname}${url.search} HTTP/1.1`, `host: ${url.host}`, "connection: keep-alive", `content-length: ${payload.length}`];
  for (const [name, value] of Object.entries(headers)) lines.push(`${name}: ${value}`);
  return { bytes: Buffer.concat([Buffer.from(`${lines.join("\r\n")}\r\n\r\n`, "latin1"), payload]) };
}

const HEADER_END = Buffer.from("\r\n\r\n", "latin1");
const CRLF = Buffer.from("\r\n", "latin1");
const CONTENT_LENGTH = /\r\ncontent-length:\s*(\d+)/i;
const CHUNKED = /\r\ntransfer-encoding:\s*chunked/i;

/** Where a chunked body that starts at `from` ends (after its last chunk's CRLF), or -1 while incomplete. */
function chunkedBodyEnd(data: Buffer, from: number): number {
  let at = from;
  for (;;) {
    const lineEnd = data.indexOf(CRLF, at);
    if (lineEnd < 0) return -1;
    const size = Number.parseInt(data.toString("latin1", at, lineEnd), 16);
    if (Number.isNaN(size)) throw new Error("malformed chunk size");
    // A chunk is its size line, its data and a CRLF; the last (size 0) has no data.
    const end = lineEnd + CRLF.length + size + CRLF.length;
    if (data.length < end) return -1;
    if (size === 0) return end;
    at = end;
  }
}

/** Where one response ends in `data`, and its status; null until all of it has arrived. */
function completeResponse(data: Buffer): { status: number; length: number } | null {
  const headerEnd = data.indexOf(HEADER_END);
  if (headerEnd < 0) return null;
  const head = data.toString("latin1", 0, headerEnd);
  const status = Number(head.slice(9, 12));
  const bodyStart = headerEnd + HEADER_END.length;
  const contentLength = CONTENT_LENGTH.exec(head);
  if (contentLength) {
    const length = bodyStart + Number(contentLength[1]);
    return data.length >= length ? { status, length } : null;
  }
  if (!CHUNKED.test(head)) throw new Error(`response with neither Content-Length nor chunked encoding: ${head.split("\r\n")[0]}`);
  const length = chunkedBodyEnd(data, bodyStart);
  return length < 0 ? null : { status, length };
}

/**
 * A node:http server closes a keep-alive connection after 5 s idle (keepAliveTimeout): a request
 * sent on it at that moment is cut off, as with any keep-alive client. Closing ours first keeps
 * such losses out of the measurement.
 */
const DEFAULT_MAX_IDLE_MS = 4_000;

class Connection {
  private buffered: Buffer = Buffer.alloc(0);
  private waiting: { resolve: (status: number) => void; reject: (err: Error) => void } | null = null;
  closed = false;
  /** When its last answer came (performance.now()). */
  idleSince = 0;

  constructor(
    private readonly socket: Socket,
    private readonly onIdle: (connection: Connection) => void,
  ) {
    socket.setNoDelay(true);
    socket.on("data", (chunk: Buffer) => this.onData(chunk));
    const fail = (err: Error): void => {
      this.closed = true;
      this.waiting?.reject(err);
      this.waiting = null;
    };
    socket.on("error", fail);
    socket.on("close", () => fail(new Error("connection closed")));
  }

  send(request: PreparedRequest): Promise<number> {
    return new Promise<number>((resolve, reject) => {
      this.waiting = { resolve, reject };
      this.socket.write(request.bytes);
    });
  }

  private onData(chunk: Buffer): void {
    this.buffered = this.buffered.length === 0 ? chunk : Buffer.concat([this.buffered, chunk]);
    let done: { status: number; length: number } | null;
    try {
      done = completeResponse(this.buffered);
    } catch (err) {
      this.socket.destroy(err as Error);
      return;
    }
    if (done === null) return;
    this.buffered = this.buffered.subarray(done.length);
    const waiting = this.waiting;
    this.waiting = null;
    this.idleSince = performance.now();
    this.onIdle(this);
    waiting?.resolve(done.status);
  }

  destroy(): void {
    this.closed = true;
    this.socket.destroy();
  }
}

/** Keep-alive connections to one server, opened as requests need them and reused when idle. */
export class RawHttpPool {
  private readonly idle: Connection[] = [];
  private readonly all = new Set<Connection>();

  constructor(
    private readonly url: URL,
    private readonly maxIdleMs = DEFAULT_MAX_IDLE_MS,
  ) {}

  /** Send one prepared request; resolves with the response's status code. */
  async send(request: PreparedRequest): Promise<number> {
    let connection = this.idle.pop();
    while (connection && (connection.closed || performance.now() - connection.idleSince > this.maxIdleMs)) {
      this.retire(connection);
      connection = this.idle.pop();
    }
    connection ??= await this.open();
    return connection.send(request);
  }

  private retire(connection: Connection): void {
    connection.destroy();
    this.all.delete(connection);
  }

  private open(): Promise<Connection> {
    return new Promise<Connection>((resolve, reject) => {
      const socket = connect(Number(this.url.port), this.url.hostname);
      socket.once("connect", () => {
        socket.off("error", reject);
        const connection = new Connection(socket, (c) => {
          if (!c.closed) this.idle.push(c);
        });
        this.all.add(connection);
        resolve(connection);
      });
      socket.once("error", reject);
    });
  }

  close(): void {
    for (const connection of this.all) connection.destroy();
    this.all.clear();
    this.idle.length = 0;
  }
}
