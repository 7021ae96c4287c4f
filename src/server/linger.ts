/**
 * Lingering close: when the server closes a connection after an answer it
 * gave before the request body had all arrived (a 413, a 401), it first
 * reads and drops what the client still sends. Closed at once, the socket
 * would meet the client's bytes with a reset, and a client that sends its
 * whole body before it reads (Python's urllib, any client that said
 * `connection: close`) would see a broken pipe instead of the answer.
 *
 * @module
 */
import type { IncomingMessage } from "node:http";
import type { Socket } from "node:net";

/**
 * The longest a closing connection goes on reading a body it answered
 * early, in milliseconds: nginx's `lingering_time`.
 */
export const LINGER_MS = 30_000;

/**
 * Makes the close that `node:http` does after the answer to `incoming`
 * (through `socket.destroySoon()`) a lingering one while the body is
 * still arriving: the answer is written and the sending side shut, the
 * rest of the body read and dropped, and the socket destroyed once the
 * body has ended, the client has closed, or {@linkcode LINGER_MS} passed.
 * Harmless when the connection stays open: the hook then goes once the
 * body ends.
 *
 * @param socket The connection.
 * @param incoming The request whose body is still arriving; the caller
 * drops what it reads.
 */
export function lingerOnClose(socket: Socket, incoming: IncomingMessage): void {
  const own = socket as Socket & { destroySoon?: () => void };
  const original = own.destroySoon;
  if (typeof original !== "function" || incoming.complete) return;
  const restore = () => {
    if (own.destroySoon === lingering) own.destroySoon = original;
  };
  function lingering(): void {
    restore();
    if (incoming.complete || socket.destroyed) {
      original!.call(socket);
      return;
    }
    socket.end();
    const timer = setTimeout(() => socket.destroy(), LINGER_MS);
    const done = () => {
      clearTimeout(timer);
      socket.destroy();
    };
    incoming.once("end", done);
    socket.once("close", done);
  }
  own.destroySoon = lingering;
  incoming.once("end", restore);
}
