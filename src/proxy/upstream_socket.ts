/**
 * The proxy's plain-HTTP connections to its upstream, which keep the
 * upstream's answer when the upstream stops reading the request.
 *
 * A server may answer before it has read a request's body (a 401 for a
 * missing key, a 413 for a body too large) and close the connection at
 * once. Its kernel then resets the connection, as bytes it never read are
 * still arriving. The answer sent before the reset stays readable here,
 * but the proxy's next write of the body fails (EPIPE or ECONNRESET), and
 * a `node:net` socket destroys itself on a failed write, the unread answer
 * with it: the client would get 502 for an answer the upstream gave.
 * curl and browsers read the answer; so does this socket. A write the peer
 * refuses is dropped instead of failing the socket: the socket reads on,
 * the HTTP client parses the upstream's answer, and the read that meets
 * the reset ends the exchange as a closed connection ends it. A peer gone
 * without an answer still fails the request, at that read.
 *
 * @module
 */
import { Socket } from "node:net";

/** The write errors that mean the peer closed or reset the connection. */
const PEER_GONE = new Set(["EPIPE", "ECONNRESET"]);

type WriteCallback = (error?: Error | null) => void;

/** Whether `error` says the peer closed or reset the connection. */
function isPeerGone(error: unknown): boolean {
  const code = (error as { code?: unknown } | null | undefined)?.code;
  return typeof code === "string" && PEER_GONE.has(code);
}

/** Passes a peer's refusal of a write on as a write done. */
function keepReading(callback: WriteCallback): WriteCallback {
  return (error) => callback(isPeerGone(error) ? null : error);
}

/**
 * A socket whose writes the peer refuses are dropped: what the peer sent
 * before it went away is still read (`Writable` implementers' hooks,
 * overridden as the stream documentation has subclasses do).
 */
class AnswerKeepingSocket extends Socket {
  override _write(
    chunk: unknown,
    encoding: BufferEncoding,
    callback: WriteCallback,
  ): void {
    super._write(chunk, encoding, keepReading(callback));
  }

  override _writev(
    chunks: { chunk: unknown; encoding: BufferEncoding }[],
    callback: WriteCallback,
  ): void {
    super._writev!(chunks, keepReading(callback));
  }

  override destroy(error?: Error): this {
    // A read that meets the reset while the answer before it is still
    // buffered, unparsed: the reader gets the answer, then the end.
    if (isPeerGone(error) && this.readableLength > 0 && !this.readableEnded) {
      this.once("end", () => super.destroy());
      this.push(null);
      return this;
    }
    return super.destroy(error);
  }
}

/** Where to connect: the fields of undici's connector options this needs. */
export interface PlainTarget {
  readonly hostname: string;
  readonly port: string;
  readonly localAddress?: string | null | undefined;
}

/** Why a connection was given up. */
export class UpstreamConnectTimeout extends Error {
  constructor(readonly timeoutMs: number) {
    super(`The upstream did not accept a connection within ${timeoutMs} ms`);
    this.name = "UpstreamConnectTimeout";
  }
}

/**
 * Opens a plain TCP connection to `target` as undici's own connector does
 * (no Nagle, TCP keep-alive after 60 s, a connect timeout), with a socket that keeps the upstream's answer (see the module
 * doc), and hands it to `callback` once connected.
 *
 * @param target The host and port.
 * @param timeoutMs The connect timeout; 0 for none.
 * @param callback Called once: with the socket, or with the error.
 */
export function connectPlain(
  target: PlainTarget,
  timeoutMs: number,
  callback: (...args: [null, Socket] | [Error, null]) => void,
): void {
  const socket = new AnswerKeepingSocket();
  let done = false;
  const timer = timeoutMs > 0
    ? setTimeout(
      () => socket.destroy(new UpstreamConnectTimeout(timeoutMs)),
      timeoutMs,
    )
    : undefined;
  const settle = (error: Error | null) => {
    if (done) return;
    done = true;
    clearTimeout(timer);
    if (error === null) callback(null, socket);
    else callback(error, null);
  };
  socket
    .setNoDelay(true)
    .setKeepAlive(true, 60_000)
    .once("connect", () => settle(null))
    .on("error", (error) => settle(error));
  socket.connect({
    port: Number(target.port || 80),
    host: target.hostname,
    ...(target.localAddress ? { localAddress: target.localAddress } : {}),
  });
}
