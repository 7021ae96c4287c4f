/**
 * A `fetch` for the proxy's upstream that sends a request exactly as given:
 * the method as written, the given headers and no others, and a body framed
 * only as the caller framed it. The runtime's `fetch` cannot: the Fetch
 * standard has it add `accept` and `accept-language` to a request lacking
 * them (Deno adds `user-agent` too), and upper-case some methods. This one
 * speaks HTTP/1.1 through undici's connection pool; besides the given
 * headers it writes only what the connection needs (`host`,
 * `connection: keep-alive`, and `content-length` for a body of known size).
 * It never follows a redirect.
 *
 * @module
 */
import { Readable } from "node:stream";
import type { Agent, Dispatcher } from "undici";
import { connectPlain } from "./upstream_socket.ts";

/** A `fetch` that owns connections: dispose it to close them. */
export interface ExactFetch extends AsyncDisposable {
  (input: string | URL | Request, init?: RequestInit): Promise<Response>;
}

/** Options of {@linkcode createExactFetch}. */
export interface ExactFetchOptions {
  /**
   * How long an idle connection stays open for reuse, in ms. Keep it below
   * the upstream's own keep-alive timeout (uvicorn, under vLLM, closes idle
   * connections after 5 s), so that a request is never sent on a connection
   * the upstream is closing.
   *
   * @default 4000
   */
  readonly keepAliveTimeoutMs?: number;
  /**
   * How long to wait for a connection to the upstream, in ms.
   *
   * @default 10000
   */
  readonly connectTimeoutMs?: number;
}

/** Statuses whose response has no body (Fetch standard: null body status). */
const NULL_BODY = new Set([101, 103, 204, 205, 304]);

/**
 * Creates a `fetch` that forwards requests exactly (see the module doc),
 * with its own connection pool. Timeouts of the exchange itself are the
 * caller's: pass a `signal`.
 *
 * @example Send a request with no headers but the ones given
 * ```ts ignore
 * import { createExactFetch } from "@incontext/incontext/proxy";
 *
 * await using exactFetch = createExactFetch();
 * const response = await exactFetch("http://127.0.0.1:8000/v1/models", {
 *   headers: [["authorization", "Bearer token"]],
 * });
 * console.log(response.status);
 * ```
 *
 * @param options Pool settings.
 * @returns The `fetch`; disposing it closes its connections.
 */
export function createExactFetch(options: ExactFetchOptions = {}): ExactFetch {
  // Loaded on the first request: undici reads environment variables as it
  // loads, which a program importing the proxy without `--allow-env`, and
  // never using this fetch, must not need.
  let agent: Promise<Agent> | undefined;
  const timeout = options.connectTimeoutMs ?? 10_000;
  const agentReady = () =>
    agent ??= import("undici").then(({ Agent, buildConnector }) => {
      const connectTls = buildConnector({ timeout });
      return new Agent({
        keepAliveTimeout: options.keepAliveTimeoutMs ?? 4000,
        // Plain HTTP keeps an answer the upstream gives before it has read
        // the body (`upstream_socket.ts`); TLS connects as undici does.
        connect: (target, callback) =>
          target.protocol === "https:"
            ? connectTls(target, callback)
            : connectPlain(target, timeout, callback),
        // The caller bounds the wait for headers and between body reads.
        headersTimeout: 0,
        bodyTimeout: 0,
      });
    });
  const exactFetch = async (
    input: string | URL | Request,
    init: RequestInit = {},
  ) =>
    input instanceof Request
      ? send(await agentReady(), input.url, {
        method: input.method,
        headers: input.headers,
        body: input.body,
        signal: input.signal,
        ...init,
      })
      : send(await agentReady(), input, init);
  return Object.assign(exactFetch, {
    [Symbol.asyncDispose]: async () => {
      if (agent !== undefined) await (await agent).destroy();
    },
  });
}

async function send(
  agent: Agent,
  input: string | URL,
  init: RequestInit,
): Promise<Response> {
  const url = new URL(input);
  const method = init.method ?? "GET";
  const options: Dispatcher.RequestOptions = {
    origin: url.origin,
    path: `${url.pathname}${url.search}`,
    method: method as Dispatcher.HttpMethod,
    headers: flatHeaders(init.headers),
    body: requestBody(init.body),
    signal: init.signal ?? null,
  };
  // undici's request() drops the reason phrase: a handler around its own
  // notes it on the way.
  const line = { statusText: "" };
  const { statusCode, headers, body } = await agent
    .compose((dispatch) => (dispatched, handler) =>
      dispatch(dispatched, notingStatusText(handler, line))
    )
    .request(options);
  const statusText = REASON_PHRASE.test(line.statusText) ? line.statusText : "";
  const responseHeaders = new Headers();
  for (const [name, value] of Object.entries(headers)) {
    if (Array.isArray(value)) {
      for (const each of value) responseHeaders.append(name, each);
    } else if (typeof value === "string") responseHeaders.append(name, value);
  }
  // A failure reaches the reader through the read it waits on; the body's
  // own error event must not also go unhandled.
  body.on("error", () => {});
  if (NULL_BODY.has(statusCode) || method === "HEAD") {
    // Read to its (empty) end, so that the connection serves again.
    body.dump().catch(() => {});
    return new Response(null, {
      status: statusCode,
      statusText,
      headers: responseHeaders,
    });
  }
  return new Response(webStream(body), {
    status: statusCode,
    statusText,
    headers: responseHeaders,
  });
}

/**
 * A reason phrase passed on as sent: printable ASCII. undici decodes the
 * status line as UTF-8, so other bytes would not be written back as they
 * came; the client's server then writes the standard phrase.
 */
const REASON_PHRASE = /^[\t\x20-\x7e]*$/;

/** `handler`, with the final response's reason phrase noted in `line`. */
function notingStatusText(
  handler: Dispatcher.DispatchHandlers,
  line: { statusText: string },
): Dispatcher.DispatchHandlers {
  return {
    onConnect: (...args) => handler.onConnect?.(...args),
    onError: (error) => handler.onError?.(error),
    onHeaders: (statusCode, headers, resume, statusText) => {
      if (statusCode >= 200) line.statusText = statusText;
      return handler.onHeaders?.(statusCode, headers, resume, statusText) ??
        true;
    },
    onData: (chunk) => handler.onData?.(chunk) ?? true,
    onComplete: (trailers) => handler.onComplete?.(trailers),
  };
}

/** Headers as undici takes them: a flat list of names and values, in order. */
function flatHeaders(headers: HeadersInit | undefined): string[] {
  const flat: string[] = [];
  if (headers === undefined) return flat;
  if (headers instanceof Headers) {
    headers.forEach((value, name) => flat.push(name, value));
  } else if (Array.isArray(headers)) {
    for (const [name, value] of headers) flat.push(name!, value!);
  } else {
    for (const [name, value] of Object.entries(headers)) flat.push(name, value);
  }
  return flat;
}

function requestBody(
  body: BodyInit | null | undefined,
): string | Uint8Array | Readable | null {
  if (body === undefined || body === null) return null;
  if (typeof body === "string" || body instanceof Uint8Array) return body;
  if (body instanceof ReadableStream) {
    // Read as the upstream takes it: chunk by chunk, framed as chunked
    // unless the headers give its length.
    return Readable.from(body as unknown as AsyncIterable<Uint8Array>, {
      objectMode: false,
    });
  }
  if (body instanceof ArrayBuffer) return new Uint8Array(body);
  throw new TypeError(
    "Cannot send the request as its body must be a string, bytes or a stream",
  );
}

/**
 * The response body as a Web stream that reads only when its reader pulls,
 * so that a slow client slows the upstream down; cancelling it closes the
 * exchange's connection.
 */
function webStream(body: Dispatcher.ResponseData["body"]) {
  const chunks = body[Symbol.asyncIterator]();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const { done, value } = await chunks.next();
      if (done) controller.close();
      else controller.enqueue(value as Uint8Array);
    },
    cancel() {
      // Ends the exchange: undici closes a connection whose body is unread.
      body.destroy();
    },
  }, { highWaterMark: 0 });
}
