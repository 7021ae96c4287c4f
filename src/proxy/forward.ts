/**
 * Forwarding rules: upstream URLs, hop-by-hop headers, the methods and bodies
 * fetch can send.
 *
 * @module
 */

// RFC 9110 section 7.6.1: meaningful for one connection only, never forwarded.
export const HOP_BY_HOP: ReadonlySet<string> = new Set([
  "connection",
  "keep-alive",
  "proxy-authenticate",
  "proxy-authorization",
  "proxy-connection",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
]);

/**
 * Header name-value pairs as `Headers` iterates them (lower-case names,
 * repeated values joined, `set-cookie` kept apart): what `fetch` and
 * `Response` take without the cost of another `Headers` object.
 */
export type HeaderPairs = [name: string, value: string][];

/** The upstream URL for an incoming URL: the upstream root + the incoming path and query. */
export function upstreamUrl(upstream: URL, incoming: URL): string {
  const base = upstream.pathname.replace(/\/+$/, "");
  return `${upstream.origin}${base}${incoming.pathname}${incoming.search}`;
}

/** How a request's headers are forwarded. */
export interface ForwardHeadersOptions {
  /** Whether the proxy rewrote the body: its length is then the runtime's to write. */
  readonly bodyChanged: boolean;
  /**
   * Whether the proxy reads the answer (a budgeted request: it learns the
   * usage). It then asks for an uncompressed answer; any other request
   * keeps the client's `accept-encoding`, or its absence.
   */
  readonly readsAnswer: boolean;
}

/** Headers to send on: the end-to-end headers the client sent. */
export function forwardHeaders(
  headers: Headers,
  { bodyChanged, readsAnswer }: ForwardHeadersOptions,
): HeaderPairs {
  if (!readsAnswer) {
    return withoutHopByHop(headers, bodyChanged ? CHANGED : HOST);
  }
  const out = withoutHopByHop(
    headers,
    bodyChanged ? READ_CHANGED : READ,
  );
  out.push(["accept-encoding", "identity"]);
  return out;
}

/**
 * What the proxy drops from a request besides the hop-by-hop headers: what
 * the connection writes anew, and `expect`, which the proxy's own server
 * answered (the upstream gets the body at once; undici refuses the field).
 */
const HOST: ReadonlySet<string> = new Set(["host", "expect"]);
const CHANGED: ReadonlySet<string> = new Set([...HOST, "content-length"]);
const READ: ReadonlySet<string> = new Set([...HOST, "accept-encoding"]);
const READ_CHANGED: ReadonlySet<string> = new Set([
  ...READ,
  "content-length",
]);
const NONE: ReadonlySet<string> = new Set();

/** Response headers to give back: end-to-end headers only. */
export function responseHeaders(headers: Headers): HeaderPairs {
  return withoutHopByHop(headers, NONE);
}

/**
 * The headers without the hop-by-hop ones, those the `Connection` header
 * names, and `drop`. One pass over the headers: copying a `Headers` object
 * and deleting names from it costs several times more. `forEach` visits the
 * pairs the iterator yields (sorted, repeated names joined, `set-cookie`
 * apart: the Fetch standard's one list) without building an iterator
 * result per pair, which is most of the iterator's cost in Deno.
 */
function withoutHopByHop(
  headers: Headers,
  drop: ReadonlySet<string>,
): HeaderPairs {
  const out: HeaderPairs = [];
  let connection: string | undefined;
  headers.forEach((value, name) => {
    if (name === "connection") connection = value;
    if (!HOP_BY_HOP.has(name) && !drop.has(name)) out.push([name, value]);
  });
  if (connection === undefined) return out;
  const named = new Set(
    connection.split(",").map((name) => name.trim().toLowerCase()),
  );
  return out.filter(([name]) => !named.has(name));
}

/** Methods `fetch` refuses to send (Fetch standard: forbidden methods). */
const FORBIDDEN_METHODS: ReadonlySet<string> = new Set([
  "CONNECT",
  "TRACE",
  "TRACK",
]);

/** Methods `fetch` sends upper-cased whatever their case (Fetch standard: normalize a method). */
const NORMALIZED_METHODS: ReadonlySet<string> = new Set([
  "DELETE",
  "GET",
  "HEAD",
  "OPTIONS",
  "POST",
  "PUT",
]);

/**
 * Why the proxy cannot send `method` upstream exactly as it came, or
 * undefined when it can. Methods are case-sensitive (RFC 9110 section 9.1):
 * `get` is not `GET`, yet `fetch` would send it as `GET`.
 */
export function unsendableMethod(method: string): string | undefined {
  const upper = method.toUpperCase();
  if (FORBIDDEN_METHODS.has(upper)) {
    return `the method ${upper} is not forwarded by the incontext proxy`;
  }
  if (NORMALIZED_METHODS.has(upper) && method !== upper) {
    return `the method must be written ${upper}: methods are case-sensitive`;
  }
  return undefined;
}

/**
 * Whether the client declared a body of one byte or more. (Chunks declare
 * no size: a GET's are most often the empty body some clients frame.)
 */
export function declaresBody(headers: Headers): boolean {
  const length = headers.get("content-length");
  return length !== null && Number(length) !== 0;
}

/**
 * The body to forward as the client framed it: null when it sent none,
 * the bytes when it declared a length of at most `limit` (so the upstream
 * gets that same length, not a chunked body), else a stream (a chunked
 * body, or one above `limit`). Throws when the client broke the body off.
 */
export async function framedBody(
  request: Request,
  limit: number,
): Promise<Uint8Array<ArrayBuffer> | ReadableStream<Uint8Array> | null> {
  if (request.body === null) return null;
  const length = request.headers.get("content-length");
  if (length !== null && Number(length) <= limit) {
    return new Uint8Array(await request.arrayBuffer());
  }
  // No declared length: a request without a body still has an empty
  // stream here, which must not become an empty chunked body upstream.
  const reader = request.body.getReader();
  let first = await reader.read();
  while (!first.done && first.value.byteLength === 0) {
    first = await reader.read();
  }
  if (first.done) return null;
  return new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(first.value);
    },
    async pull(controller) {
      const { done, value } = await reader.read();
      if (done) controller.close();
      else controller.enqueue(value);
    },
    cancel(reason) {
      return reader.cancel(reason);
    },
  }, { highWaterMark: 0 });
}
