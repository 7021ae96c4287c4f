/**
 * The HTTP/1.1 server of the command's processes: a Web handler served by
 * `node:http`, which
 * bounds what `Deno.serve` does not: the time a client may take to send its
 * request head and its body, how long an idle keep-alive connection stays
 * open, and how many connections are open at once. A connection that
 * breaks a bound is closed; one beyond the cap is closed as soon as it is
 * accepted; a failed accept is never thrown, and the listener accepts again
 * once descriptors are free. Closing ends idle connections at once and the
 * others as their last response is written.
 *
 * @module
 */
import {
  createServer,
  type IncomingMessage,
  type Server,
  type ServerResponse,
  STATUS_CODES,
} from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { readFileSync } from "node:fs";
import { clearInterval, setInterval } from "node:timers";
import { getLogger } from "@logtape/logtape";
import { errorType } from "../core/error_type.ts";
import { type ClientError, clientErrorAnswer } from "./client_errors.ts";
import { OpenConnections } from "./open_connections.ts";
import {
  closeWhenAnswered,
  destroyAfterDelay,
  LINGER_MS,
  lingerOnClose,
} from "./linger.ts";
import { DROP_BYTES, type RequestBody, requestBody } from "./request_body.ts";
import { UploadAborted } from "../proxy/upload_aborted.ts";
import { errorResponse } from "../bridges/answers.ts";
import type { ProxyHandler } from "../proxy/options.ts";

const logger = getLogger(["incontext", "server"]);

/** Options for {@linkcode startHttpServer}. */
export interface HttpServerOptions {
  readonly hostname: string;
  /** The port; 0 picks a free one. */
  readonly port: number;
  /** Longest time to receive a request's head, in ms. */
  readonly headersTimeoutMs: number;
  /** Longest time to receive a whole request (head and body), in ms. */
  readonly requestTimeoutMs: number;
  /** How long an idle keep-alive connection stays open, in ms. */
  readonly keepAliveTimeoutMs: number;
  /** The most connections open at once. */
  readonly maxConnections: number;
  /** The most connections waiting to be accepted. */
  readonly backlog: number;
  /**
   * The largest request head (request line and header fields), in bytes;
   * a larger one is answered 431.
   *
   * @default 65536
   */
  readonly maxHeaderBytes?: number;
  /**
   * Called with the status of each answer the server writes itself, for a
   * request its parser refused (400, 408, 431, 501): the handler never saw
   * it, so only the server can count it.
   */
  readonly onRefused?: (status: number) => void;
}

/** A running server. */
export interface HttpServer extends AsyncDisposable {
  /** The address it listens on. */
  readonly hostname: string;
  readonly port: number;
  /**
   * Stops accepting connections and closes the idle ones; every other is
   * closed once its last response is written (which says
   * `connection: close`). Resolves once every connection is closed.
   */
  close(): Promise<void>;
  /** Closes every connection now, in flight or not. */
  closeAll(): void;
}

/**
 * The largest request head read by default, in bytes: node's 16 KiB is too
 * little for long cookies and keys; above 64 KiB, as above what Deno.serve
 * (hyper) reads, some upstreams would refuse the head and close.
 */
export const DEFAULT_MAX_HEADER_BYTES = 64 * 1024;

/** Descriptors kept apart from client connections: the listener, logs, files, the tokenizer. */
const RESERVED_FILES = 32;
/** node's listen backlog, where nothing bounds it. */
const DEFAULT_BACKLOG = 511;

/** The connection cap and the listen backlog the server runs with. */
export interface ConnectionBounds {
  readonly maxConnections: number;
  readonly backlog: number;
}

/**
 * The connection cap and listen backlog the process's open-file limit
 * allows. Each client connection may hold a descriptor of its own and one to
 * the upstream. A connection beyond the cap holds one too until it is
 * closed, and the server accepts every pending connection (up to the
 * backlog) in one turn before any is closed: the cap leaves room for a full
 * backlog. An accept that fails for want of a descriptor stops Deno's
 * node:net from accepting until the server re-arms its listener (within a
 * second). `limits` is the text of
 * `/proc/self/limits`; without it the cap is `wanted`.
 */
export function connectionBounds(
  wanted: number,
  limits: string | undefined,
): ConnectionBounds {
  const soft = /^Max open files\s+(\d+)/m.exec(limits ?? "")?.[1];
  if (soft === undefined) {
    return { maxConnections: wanted, backlog: DEFAULT_BACKLOG };
  }
  const files = Number(soft);
  const backlog = Math.min(DEFAULT_BACKLOG, Math.max(8, Math.floor(files / 8)));
  const allowed = Math.floor((files - RESERVED_FILES - backlog) / 2);
  return { maxConnections: Math.max(1, Math.min(wanted, allowed)), backlog };
}

/** The text of `/proc/self/limits`, or undefined off Linux. */
export function processLimits(): string | undefined {
  try {
    return readFileSync("/proc/self/limits", "utf8");
  } catch {
    return undefined;
  }
}

/**
 * How often the listener is re-armed. Deno's node:net stops polling a
 * listener whose accept failed (for want of a descriptor, say) and reports
 * nothing; listening again on the same handle makes it accept what waits.
 */
const REARM_MS = 1000;

/** Serves `handler` until closed. */
export function startHttpServer(
  handler: ProxyHandler,
  options: HttpServerOptions,
): Promise<HttpServer> {
  const server = createServer({
    // A head over it is refused (431) before the handler runs.
    maxHeaderSize: options.maxHeaderBytes ?? DEFAULT_MAX_HEADER_BYTES,
    headersTimeout: options.headersTimeoutMs,
    requestTimeout: options.requestTimeoutMs,
    keepAliveTimeout: options.keepAliveTimeoutMs,
    // How often the timeouts are checked: a fraction of the shortest one.
    connectionsCheckingInterval: Math.max(
      100,
      Math.min(options.headersTimeoutMs, options.requestTimeoutMs) / 4,
    ),
  });
  const connections = new OpenConnections(server);
  const serve =
    (expectsContinue: boolean) =>
    (incoming: IncomingMessage, outgoing: ServerResponse) => {
      connections.begin(incoming, outgoing);
      void exchange(handler, { incoming, outgoing, expectsContinue });
    };
  server.on("request", serve(false));
  // `Expect: 100-continue`: the 100 goes out when the handler first reads
  // the body; an answer written before that (413, 401, 501) is final, and
  // the client never sends the body.
  server.on("checkContinue", serve(true));
  // Any other expectation: served as vLLM's server does (it ignores it),
  // not answered 417 as node:http would.
  server.on("checkExpectation", serve(false));
  server.maxConnections = options.maxConnections;
  server.on("drop", () => {
    logger.debug("connection refused: {max} connections open", {
      max: options.maxConnections,
    });
  });
  server.on("clientError", (error: ClientError, socket: Socket) => {
    answerClientError(error, { socket, connections, options });
  });
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen({
      port: options.port,
      host: options.hostname,
      backlog: options.backlog,
    }, () => {
      server.off("error", reject);
      // Only once listening: a failure to listen is the caller's to report.
      server.on("error", (error) => {
        logger.error("server error: error={error}", {
          error: errorType(error),
        });
      });
      resolve(running(server, connections, options.backlog));
    });
  });
}

/** The listening server's handle: its address, its re-arming, its closing. */
function running(
  server: Server,
  connections: OpenConnections,
  backlog: number,
): HttpServer {
  const { port, address } = server.address() as AddressInfo;
  const rearm = setInterval(() => rearmListener(server, backlog), REARM_MS);
  rearm.unref();
  let closed: Promise<void> | undefined;
  const close = () => {
    closed ??= new Promise<void>((done) => {
      clearInterval(rearm);
      server.close(() => done());
      connections.close();
    });
    return closed;
  };
  return {
    hostname: address,
    port,
    close,
    closeAll: () => server.closeAllConnections(),
    async [Symbol.asyncDispose]() {
      const done = close();
      server.closeAllConnections();
      await done;
    },
  };
}

/**
 * Listens again on the listening handle. In Deno this only puts the
 * listener back in the event loop's poll (connections waiting are kept);
 * in Node it repeats `listen(2)` on the same socket, which changes nothing.
 */
function rearmListener(server: Server, backlog: number): void {
  const handle = (server as unknown as {
    _handle?: { listen?(backlog: number): number } | null;
  })._handle;
  const status = handle?.listen?.(backlog) ?? 0;
  if (status !== 0) {
    logger.warn("listener not re-armed: status={status}", { status });
  }
}

/**
 * Ends a connection whose request could not be read (malformed, or a head
 * or body too slow) with an answer of the server's own, written after the
 * responses in flight on it so that their framing holds.
 */
function answerClientError(
  error: ClientError,
  { socket, connections, options }: {
    readonly socket: Socket;
    readonly connections: OpenConnections;
    readonly options: HttpServerOptions;
  },
): void {
  logger.debug("connection closed: error={error}", {
    error: error.code ?? errorType(error),
  });
  // The parser fails again on each chunk that follows an error: the
  // connection is answered once.
  if (refused.has(socket)) return;
  refused.add(socket);
  // A connection reset or closed by the client has no one to answer.
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  // What the client still sends is read and dropped, as a body is: up to
  // DROP_BYTES, then the socket is no longer read, and is destroyed soon
  // after its answer.
  let answered = false;
  let overflowed = false;
  let dropped = 0;
  const drop = (chunk: Uint8Array) => {
    dropped += chunk.byteLength;
    if (dropped <= DROP_BYTES) return;
    socket.off("data", drop);
    socket.pause();
    overflowed = true;
    if (answered) destroyAfterDelay(socket);
  };
  socket.on("data", drop);
  void clientErrorAnswer(error).then(({ status, message }) => {
    options.onRefused?.(status);
    connections.afterResponses(socket, () => {
      if (!socket.writable) {
        socket.destroy();
        return;
      }
      // A client too slow is cut off once it has its answer. Any other
      // may still be sending (the rest of a large head): the sending side
      // is shut, and what still comes is read and dropped until the
      // client closes, for a while at most.
      const timer = setTimeout(() => socket.destroy(), LINGER_MS);
      socket.once("close", () => clearTimeout(timer));
      socket.end(message, () => {
        answered = true;
        if (status === 408) socket.destroy();
        else if (overflowed) destroyAfterDelay(socket);
      });
    });
  });
}

/** The connections the server has answered a parse error on. */
const refused = new WeakSet<Socket>();

/** One exchange as node:http hands it over. */
interface Exchange {
  readonly incoming: IncomingMessage;
  readonly outgoing: ServerResponse;
  /** Whether the client waits for `100 Continue` before it sends the body. */
  readonly expectsContinue: boolean;
}

/** One request through the handler, and its answer written back. */
async function exchange(
  handler: ProxyHandler,
  { incoming, outgoing, expectsContinue }: Exchange,
): Promise<void> {
  const abort = new AbortController();
  outgoing.on("close", () => {
    // The connection went before the answer: during the upload, or after.
    if (!outgoing.writableFinished) {
      abort.abort(incoming.complete ? undefined : new UploadAborted());
    }
  });
  const method = incoming.method ?? "GET";
  const socket = incoming.socket;
  const body = requestBody(incoming, {
    onFirstRead: () => {
      if (expectsContinue && !outgoing.headersSent) outgoing.writeContinue();
    },
    onAborted: () => abort.abort(new UploadAborted()),
    // Too much to drop: the connection ends after the answer.
    onOverflow: () => closeWhenAnswered(socket, outgoing),
  });
  // A GET's or HEAD's body is never forwarded: read and dropped.
  const forwarded = method !== "GET" && method !== "HEAD";
  if (!forwarded) body.discard();
  let response: Response;
  try {
    const remote = socket.remoteAddress;
    response = await handler(
      toRequest(incoming, {
        body: forwarded ? body : undefined,
        signal: abort.signal,
      }),
      remote === undefined ? {} : { remoteAddr: { hostname: remote } },
    );
  } catch (error) {
    response = notHandled(error, method);
  }
  if (!incoming.complete) {
    if (expectsContinue && !body.asked) {
      // Answered before the 100: the client sends no body, so nothing on
      // the connection can be read after this answer.
      outgoing.shouldKeepAlive = false;
    }
    // More is still to come than the server drops: the answer says that
    // the connection closes (as Go's net/http does).
    const declared = Number(incoming.headers["content-length"] ?? 0);
    if (declared - body.received > DROP_BYTES) outgoing.shouldKeepAlive = false;
    // Answered while the body still arrives: if the connection closes
    // after the answer, it reads the rest first.
    lingerOnClose(socket, incoming);
  }
  try {
    await write(response, outgoing);
  } finally {
    // What the handler left unread is read and dropped, so that the next
    // request on the connection (or the client's wait for its answer) is
    // not stuck behind it.
    body.discard();
  }
}

/** The answer to a request the handler threw on. */
function notHandled(error: unknown, method: string): Response {
  logger.debug("request not handled: error={error}", {
    error: errorType(error),
  });
  // `new Request` refuses what fetch cannot send (CONNECT, TRACE, TRACK).
  return error instanceof TypeError
    ? errorResponse(501, {
      code: "method_not_supported",
      message:
        `Cannot forward the request as the method ${method} is not forwarded by the incontext proxy`,
    })
    : errorResponse(500, {
      code: "internal_error",
      message: "The incontext proxy failed to handle the request",
    });
}

function toRequest(
  incoming: IncomingMessage,
  { body, signal }: {
    readonly body: RequestBody | undefined;
    readonly signal: AbortSignal;
  },
): Request {
  const headers = new Headers();
  const raw = incoming.rawHeaders;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    headers.append(raw[i]!, raw[i + 1]!);
  }
  const init: RequestInit & { duplex?: "half" } = {
    method: incoming.method ?? "GET",
    headers,
    signal,
  };
  if (body !== undefined) {
    init.body = body.stream;
    init.duplex = "half";
  }
  return new Request(new URL(incoming.url ?? "/", "http://proxy"), init);
}

/** Writes a Response with backpressure; a body that errors cuts the connection. */
async function write(
  response: Response,
  outgoing: ServerResponse,
): Promise<void> {
  if (outgoing.destroyed) {
    await response.body?.cancel().catch(() => {});
    return;
  }
  const headers: string[] = [];
  response.headers.forEach((value, name) => {
    headers.push(name, value);
  });
  outgoing.writeHead(response.status, reasonPhrase(response), headers);
  if (response.body === null) {
    outgoing.end();
    return;
  }
  const reader = response.body.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (outgoing.destroyed) {
        await reader.cancel();
        return;
      }
      if (!outgoing.write(value)) await drained(outgoing);
    }
    outgoing.end();
  } catch (error) {
    // The upstream cut the stream: the client's ends with an error too.
    logger.warn("response stream failed: error={error}", {
      error: errorType(error),
    });
    outgoing.destroy();
  }
}

/**
 * The status line's reason phrase: the response's own (an upstream's,
 * passed on), else the standard one. node writes an empty phrase when
 * given "", and "unknown" when given none for a status it does not know.
 */
function reasonPhrase({ status, statusText }: Response): string {
  return statusText || (STATUS_CODES[status] ?? "");
}

function drained(outgoing: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      outgoing.off("drain", done);
      outgoing.off("close", done);
      resolve();
    };
    outgoing.on("drain", done);
    outgoing.on("close", done);
  });
}
