/**
 * The connections open on the HTTP/1.1 server and the exchanges in
 * flight on each: what lets the server close a connection the moment it is
 * idle once it is closing, and write an answer of its own after the
 * responses in flight rather than into them.
 *
 * @module
 */
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import type { Socket } from "node:net";

/** The exchanges in flight on one connection. */
interface Connection {
  readonly exchanges: Map<IncomingMessage, ServerResponse>;
  /** What runs once no exchange is in flight. */
  readonly onIdle: (() => void)[];
}

/**
 * Tracks `server`'s connections. Once {@linkcode OpenConnections.close} is
 * called, a connection is closed as soon as it is idle: at once when nothing
 * is in flight on it, else when its last response is written, which then
 * says `connection: close`. Deno's `closeIdleConnections()` spares a
 * connection that has carried no request yet (`fetch` opens such spares),
 * and its responses promise keep-alive while the server closes.
 */
export class OpenConnections {
  readonly #open = new Map<Socket, Connection>();
  #closing = false;

  /** Starts tracking the connections `server` accepts from now on. */
  constructor(server: Server) {
    server.on("connection", (socket: Socket) => {
      this.#open.set(socket, { exchanges: new Map(), onIdle: [] });
      socket.once("close", () => this.#open.delete(socket));
    });
  }

  /** Counts an exchange in flight until its response is written or cut. */
  begin(incoming: IncomingMessage, outgoing: ServerResponse): void {
    const socket = incoming.socket;
    const connection = this.#open.get(socket);
    if (connection === undefined) return;
    if (this.#closing) outgoing.shouldKeepAlive = false;
    connection.exchanges.set(incoming, outgoing);
    outgoing.once("close", () => {
      connection.exchanges.delete(incoming);
      if (connection.exchanges.size > 0) return;
      for (const then of connection.onIdle.splice(0)) then();
      if (this.#closing) socket.end();
    });
  }

  /**
   * Runs `then` once the responses in flight on `socket` are written, so
   * that an answer written after them keeps their framing: at once when
   * none is, or when a request is still being read (its body may be what
   * failed).
   */
  afterResponses(socket: Socket, then: () => void): void {
    const connection = this.#open.get(socket);
    const waiting = connection !== undefined &&
      connection.exchanges.size > 0 &&
      [...connection.exchanges.keys()].every((incoming) => incoming.complete);
    if (waiting) connection.onIdle.push(then);
    else then();
  }

  /** Closes the idle connections now, and every other once it is idle. */
  close(): void {
    this.#closing = true;
    for (const [socket, { exchanges }] of this.#open) {
      if (exchanges.size === 0) socket.destroy();
      for (const outgoing of exchanges.values()) {
        if (!outgoing.headersSent) outgoing.shouldKeepAlive = false;
      }
    }
  }
}
