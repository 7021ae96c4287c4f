/**
 * Lingering close: when the server closes a connection after an answer it
 * gave before the request body had all arrived (a 413, a 401), it first
 * reads and drops what the client still sends. Closed at once, the socket
 * would meet the client's bytes with a reset, and a client that sends its
 * whole body before it reads (Python's urllib, any client that said
 * `connection: close`) would see a broken pipe instead of the answer. What
 * it drops is bounded: past that the connection is closed with the answer
 * given a head start ({@linkcode closeWhenAnswered}).
 *
 * @module
 */
import type { IncomingMessage, ServerResponse } from "node:http";
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

/**
 * How long a connection closed with bytes still unread waits after its FIN
 * before it is destroyed: closing a socket with unread bytes sends a reset,
 * which may overtake an answer still on its way. Go's net/http waits as
 * long (`rstAvoidanceDelay`).
 */
export const RESET_DELAY_MS = 500;

/**
 * Closes a connection whose request body is no longer read (more of it
 * came than the server drops): once its answer is written, the sending
 * side is shut, and the socket destroyed once the client closes or after
 * {@linkcode RESET_DELAY_MS}. An answer not yet begun says
 * `connection: close`. A client still sending then meets a reset; one that
 * reads after its send failed (httpx, under the `openai` SDK) still reads
 * the answer.
 *
 * @param socket The connection.
 * @param outgoing The answer to the request whose body is left unread.
 */
export function closeWhenAnswered(
  socket: Socket,
  outgoing: ServerResponse,
): void {
  if (!outgoing.headersSent) outgoing.shouldKeepAlive = false;
  const close = () => {
    socket.end();
    destroyAfterDelay(socket);
  };
  if (outgoing.writableFinished) close();
  else outgoing.once("finish", close);
}

/**
 * Destroys `socket`, whose answer is written and whose sending side is
 * shut, after {@linkcode RESET_DELAY_MS} unless the client closes first.
 */
export function destroyAfterDelay(socket: Socket): void {
  if (socket.destroyed) return;
  const timer = setTimeout(() => socket.destroy(), RESET_DELAY_MS);
  socket.once("close", () => clearTimeout(timer));
}
