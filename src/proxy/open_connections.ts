/**
 * The connections open on the proxy's HTTP/1.1 server and the exchanges in
 * flight on each: what lets the server close a connection the moment it is
 * idle once it is closing.
 *
 * @module
 */
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import type { Socket } from "node:net";

/** The exchanges in flight on one connection. */
interface Connection {
  readonly exchanges: Map<IncomingMessage, ServerResponse>;
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
      this.#open.set(socket, { exchanges: new Map() });
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
      if (this.#closing && connection.exchanges.size === 0) socket.end();
    });
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
