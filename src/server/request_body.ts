/**
 * A `node:http` request's body as a Web stream that the handler may cancel
 * or leave unread without harm: after a cancel, or once the answer is
 * written, what the client still sends is read and dropped, so the
 * connection stays usable and a client that sends its whole body before it
 * reads the answer still gets the answer. Up to {@linkcode DROP_BYTES}:
 * past that the body is no longer read, and the server closes the
 * connection.
 *
 * `Readable.toWeb()` is not used: its `data` listener stays attached after a
 * cancel, and `IncomingMessage` is destroyed only once its socket is, so a
 * chunk already buffered when the handler cancels (a 413 for a declared
 * length over the limit, with bytes in flight) is pushed into the closed
 * stream from a `nextTick` callback: an uncaught `TypeError` that ends the
 * process.
 *
 * @module
 */
import type { IncomingMessage } from "node:http";
import { UploadAborted } from "../proxy/upload_aborted.ts";

/** What the server learns from a request body as the handler reads it. */
export interface RequestBodyHooks {
  /**
   * Called once, when the handler first asks for the body: the moment to
   * send `100 Continue` to a client that waits for it.
   */
  readonly onFirstRead?: () => void;
  /** Called once when the client breaks the upload off, before the stream errors. */
  readonly onAborted?: () => void;
  /**
   * Called once when more than {@linkcode DROP_BYTES} have been dropped:
   * the body is no longer read, so the connection can carry nothing more.
   */
  readonly onOverflow?: () => void;
}

/** A request body and the means to stop reading it. */
export interface RequestBody {
  /** The bytes as they arrive: a pull reads the next chunk off the socket. */
  readonly stream: ReadableStream<Uint8Array>;
  /** Whether the handler has asked for the body. */
  readonly asked: boolean;
  /** How many bytes of the body have arrived, handed on or dropped. */
  readonly received: number;
  /**
   * Stops handing the body on: the rest is read and dropped. Harmless
   * after the body has ended.
   */
  discard(): void;
}

/**
 * The most bytes of a body the server reads and drops once it no longer
 * wants them. Deno's `node:net` allocates a new buffer for each read of a
 * socket, which V8 frees only at a collection that such garbage brings on
 * late: a body dropped at the socket's speed grows the process by about
 * its own size ([reliability.md](../../docs/reliability.md)).
 * Go's net/http drops 256 KiB; this covers a client that sends a few MiB
 * past a limit before it reads the answer, which then keeps its connection.
 */
export const DROP_BYTES = 4 * 1024 * 1024;

/**
 * How many bytes may wait in the stream before the socket is paused: a few
 * of node's 64 KiB reads, so that a body read whole does not pause and
 * resume the socket each chunk.
 */
const QUEUED_BYTES = 256 * 1024;

/**
 * Wraps `incoming`'s body. The socket is read only when the handler asks
 * (a pull), so a body the handler never reads is never buffered.
 *
 * @param incoming The request as `node:http` emits it.
 * @param hooks What to call on the first read and on a broken upload.
 * @returns The body's stream and its discard switch.
 */
export function requestBody(
  incoming: IncomingMessage,
  hooks: RequestBodyHooks = {},
): RequestBody {
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  // Whether chunks still go to the stream: false once it ended, errored,
  // was cancelled, or the body is discarded.
  let open = true;
  let asked = false;
  const detach = () => {
    open = false;
    incoming.off("data", onData);
    incoming.off("end", onEnd);
  };
  let received = 0;
  function onData(chunk: Uint8Array): void {
    if (!open) return;
    received += chunk.byteLength;
    // A copy: the socket's read buffer is not the stream's to keep.
    controller.enqueue(new Uint8Array(chunk));
    if ((controller.desiredSize ?? 0) <= -QUEUED_BYTES) incoming.pause();
  }
  function onEnd(): void {
    if (!open) return;
    detach();
    controller.close();
  }
  const onBroken = () => {
    if (incoming.complete || !open) return;
    detach();
    hooks.onAborted?.();
    controller.error(new UploadAborted());
  };
  // Paused first: a data listener added to a stream not paused on purpose
  // would start reading at once.
  incoming.pause();
  incoming.on("data", onData);
  incoming.on("end", onEnd);
  incoming.on("aborted", onBroken);
  incoming.on("close", onBroken);
  // A socket error after the body ended is the response's concern.
  incoming.on("error", onBroken);
  let dropping = false;
  let dropped = 0;
  function onDropped(chunk: Uint8Array): void {
    received += chunk.byteLength;
    dropped += chunk.byteLength;
    if (dropped <= DROP_BYTES) return;
    incoming.off("data", onDropped);
    // Paused, the socket is no longer read: what the client still sends
    // waits in its buffers until the connection is closed.
    incoming.pause();
    hooks.onOverflow?.();
  }
  const discard = () => {
    if (open) detach();
    if (dropping) return;
    dropping = true;
    incoming.on("data", onDropped);
    incoming.resume();
  };
  const stream = new ReadableStream<Uint8Array>({
    start(started) {
      controller = started;
    },
    pull() {
      if (!asked) {
        asked = true;
        hooks.onFirstRead?.();
      }
      incoming.resume();
    },
    cancel: discard,
  }, { highWaterMark: 0, size: (chunk) => chunk.byteLength });
  return {
    stream,
    get asked() {
      return asked;
    },
    get received() {
      return received;
    },
    discard,
  };
}
