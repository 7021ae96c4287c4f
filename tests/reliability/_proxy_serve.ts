/**
 * The proxy handler served in this process on port 0, in front of any
 * upstream, reaching it as `incontext serve` does (through
 * `createExactFetch()`) unless the options give a fetch.
 */
import { FakeBackend } from "../../src/testing/mod.ts";
import {
  createExactFetch,
  createProxyHandler,
  type ProxyOptions,
} from "../../src/proxy/mod.ts";

export const W = 55705;
export const C = 65536;

/** A served proxy; dispose it to close it. */
export interface ServedProxy extends AsyncDisposable {
  /** The proxy's root, `http://127.0.0.1:<port>`. */
  readonly url: string;
  readonly port: number;
  /** What the handler threw or a response body errored with, as the server saw it. */
  readonly errors: unknown[];
  /** How many requests the handler holds: called, and not yet answered. */
  readonly inFlight: number;
}

/**
 * Serves the proxy in front of `upstream`, counting with a fixed backend
 * unless `options` gives one.
 */
export function serveProxy(
  upstream: string,
  options: Partial<ProxyOptions> = {},
): ServedProxy {
  const exactFetch = options.fetch === undefined
    ? createExactFetch()
    : undefined;
  const handler = createProxyHandler({
    upstream,
    window: W,
    contextLength: C,
    backend: new FakeBackend({ count: 100 }),
    ...(exactFetch === undefined ? {} : { fetch: exactFetch }),
    ...options,
  });
  const errors: unknown[] = [];
  let inFlight = 0;
  const server = Deno.serve({
    port: 0,
    hostname: "127.0.0.1",
    onListen() {},
    onError: (error) => {
      errors.push(error);
      return new Response(null, { status: 500 });
    },
  }, async (request, info) => {
    inFlight++;
    try {
      return await handler(request, info);
    } finally {
      inFlight--;
    }
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}`,
    port: server.addr.port,
    errors,
    get inFlight() {
      return inFlight;
    },
    [Symbol.asyncDispose]: async () => {
      await server.shutdown();
      await exactFetch?.[Symbol.asyncDispose]();
    },
  };
}

/** POSTs JSON to `url`. */
export function postJson(
  url: string,
  body: unknown,
  init: RequestInit = {},
): Promise<Response> {
  return fetch(url, {
    method: "POST",
    ...init,
    headers: {
      "content-type": "application/json",
      ...Object.fromEntries(new Headers(init.headers)),
    },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
}
