/**
 * What the protocol fakes (llama.cpp, TGI) share: recording requests,
 * holding "slow" answers, broken bodies, and serving a handler on port 0.
 *
 * @module
 */

/** One request a fake received. */
export interface FakeServerRequest {
  /** The HTTP method. */
  readonly method: string;
  /** The URL path, such as `/tokenize`. */
  readonly path: string;
  /** The URL query, such as `?tenant=a`, or `""`. */
  readonly search: string;
  /** The headers, with lower-case names. */
  readonly headers: Readonly<Record<string, string>>;
  /** The raw body, byte for byte as text. */
  readonly text: string;
  /** The body parsed as JSON, or `undefined` when it is not JSON. */
  readonly body: unknown;
}

/** Answers one request; `hold` aborts when a held ("slow") answer may end. */
export type FakeRespond = (
  request: Request,
  hold: AbortSignal[],
) => Promise<Response>;

/** Reads and records a request. */
export async function recordRequest(
  request: Request,
  requests: FakeServerRequest[],
): Promise<FakeServerRequest> {
  const text = await request.text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  const { pathname: path, search } = new URL(request.url);
  const recorded = {
    method: request.method,
    path,
    search,
    headers: Object.fromEntries(request.headers),
    text,
    body,
  };
  requests.push(recorded);
  return recorded;
}

/** A server's `handler` and a `fetch` that hands requests to it without a network. */
export function handlerAndFetch(
  respond: FakeRespond,
  signal: AbortSignal | undefined,
): {
  handler: (request: Request) => Promise<Response>;
  fetch: typeof globalThis.fetch;
} {
  return {
    // A server's request.signal is left alone: Deno.serve warns about listeners on it.
    handler: (request) =>
      respond(request, signal === undefined ? [] : [signal]),
    fetch: async (input, init) => {
      const request = new Request(input, init);
      request.signal.throwIfAborted();
      const hold = signal === undefined
        ? [request.signal]
        : [request.signal, signal];
      const response = await respond(request, hold);
      // A real fetch rejects once aborted, whatever the server did meanwhile.
      request.signal.throwIfAborted();
      return response;
    },
  };
}

/** Resolves once any of `signals` aborts; never, for none. */
export function released(signals: AbortSignal[]): Promise<void> {
  const any = AbortSignal.any(signals);
  return new Promise((resolve) => {
    if (any.aborted) resolve();
    else any.addEventListener("abort", () => resolve(), { once: true });
  });
}

export const JSON_HEADERS: Readonly<Record<string, string>> = {
  "content-type": "application/json",
};

/** The first half of a JSON text: it never parses. */
export function firstHalf(json: string): string {
  return json.slice(0, Math.floor(json.length / 2));
}

/**
 * `text` as a chunked body with no length, in 64 KiB parts, then `end`:
 * when it throws, the body errors and the server breaks off the connection.
 */
export function streamed(text: string, end?: () => unknown): Response {
  const bytes = new TextEncoder().encode(text);
  let offset = 0;
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (offset < bytes.length) {
        controller.enqueue(bytes.subarray(offset, offset += 65_536));
        return;
      }
      await end?.();
      controller.close();
    },
  });
  return new Response(body, { headers: JSON_HEADERS });
}

/** A fake served on `127.0.0.1`: its root URLs, and how to close it. */
export interface ServedFake {
  /** `http://127.0.0.1:<port>`. */
  readonly url: string;
  /** The same on a port nothing listens on, for the "refused" fault. */
  readonly refusedUrl: string;
  /** Releases held answers, then closes the server. */
  close(): Promise<void>;
}

/**
 * Serves the handler `create` builds (given a signal that aborts on close)
 * on `127.0.0.1`, on a port the system picks. Deno only.
 *
 * @throws {TypeError} If the runtime is not Deno.
 */
export async function serveOnLocalPort(
  what: string,
  userSignal: AbortSignal | undefined,
  create: (signal: AbortSignal) => (request: Request) => Promise<Response>,
): Promise<ServedFake> {
  if (typeof Deno === "undefined") {
    throw new TypeError(
      `Cannot serve ${what} as the runtime is not Deno: serve its handler instead`,
    );
  }
  const closing = new AbortController();
  const signal = userSignal === undefined
    ? closing.signal
    : AbortSignal.any([userSignal, closing.signal]);
  const handler = create(signal);
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const refusedPort = listener.addr.port;
  listener.close();
  let server: Deno.HttpServer<Deno.NetAddr> | undefined;
  await new Promise<void>((resolve) => {
    server = Deno.serve({
      port: 0,
      hostname: "127.0.0.1",
      onListen: () => resolve(),
      // A handler that throws gets a bare 500, without a log line.
      onError: () => new Response(null, { status: 500 }),
    }, handler);
  });
  const running = server as Deno.HttpServer<Deno.NetAddr>;
  let closed: Promise<void> | undefined;
  return {
    url: `http://127.0.0.1:${running.addr.port}`,
    refusedUrl: `http://127.0.0.1:${refusedPort}`,
    close() {
      // Held requests must end first: shutdown() waits for every response.
      closing.abort();
      closed ??= running.shutdown();
      return closed;
    },
  };
}

/** The faults every protocol fake offers. */
export const COMMON_FAULTS = [
  "none",
  "refused",
  "slow",
  "reset",
  "oversized",
  "truncated-json",
  "non-json",
  "non-object",
  "http-429",
  "http-500",
  "http-503",
] as const;

/**
 * The answer under a fault that breaks the transport or the body, or
 * `undefined` for the others. `ok` is the valid answer's JSON; `huge`
 * builds an oversized valid answer.
 */
export function brokenAnswer(
  fault: string,
  ok: string,
  huge: () => string,
): Response | undefined {
  switch (fault) {
    case "truncated-json":
      return new Response(firstHalf(ok), { headers: JSON_HEADERS });
    case "reset":
      return streamed(firstHalf(ok), () => {
        throw new Error("The fake server reset the connection");
      });
    case "oversized":
      return streamed(huge());
    case "non-object":
      return Response.json([JSON.parse(ok)]);
    default:
      return undefined;
  }
}
