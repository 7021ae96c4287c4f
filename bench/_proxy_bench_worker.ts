/**
 * One server of the proxy benchmarks, in its own Worker (its own thread and
 * event loop, as a separate process would have): the fake vLLM upstream, a
 * bare pass-through proxy, or the incontext proxy. The first message says
 * which ({@linkcode ServerSpec}); the worker answers `{ url }` once it
 * listens, and `{ closed: true }` after `"close"`.
 *
 * @module
 */
import { createCountCache, sharedCountCache } from "../src/cache/mod.ts";
import { VllmBackend } from "../src/backends/vllm/mod.ts";
import { createProxyHandler } from "../src/proxy/mod.ts";
import { startHttpServer } from "../src/server/http_server.ts";
import { createFakeUpstreamHandler } from "../src/testing/mod.ts";
import type { ServerSpec } from "./_proxy_bench_setup.ts";

interface WorkerScope {
  postMessage(message: unknown): void;
  onmessage: ((event: MessageEvent) => void) | null;
}

const scope = globalThis as unknown as WorkerScope;
let close: () => Promise<void> = () => Promise.resolve();

scope.onmessage = (event) => {
  const message = event.data as ServerSpec | "close";
  if (message === "close") {
    void close().then(() => scope.postMessage({ closed: true }));
    return;
  }
  void start(message).then((url) => scope.postMessage({ url }));
};

async function start(spec: ServerSpec): Promise<string> {
  const { handler, dispose } = build(spec);
  if (spec.role === "incontext" && spec.server === "node") {
    // The defaults of `incontext serve`.
    const server = await startHttpServer(handler, {
      hostname: "127.0.0.1",
      port: 0,
      headersTimeoutMs: 30_000,
      requestTimeoutMs: 300_000,
      keepAliveTimeoutMs: 75_000,
      maxConnections: 512,
      backlog: 511,
    });
    close = async () => {
      await server[Symbol.asyncDispose]();
      await dispose();
    };
    return `http://127.0.0.1:${server.port}`;
  }
  const { promise: listening, resolve } = Promise.withResolvers<void>();
  const server = Deno.serve({
    port: 0,
    hostname: "127.0.0.1",
    onListen: () => resolve(),
    onError: () => new Response(null, { status: 500 }),
  }, handler);
  await listening;
  close = async () => {
    await server.shutdown();
    await dispose();
  };
  return `http://127.0.0.1:${server.addr.port}`;
}

function build(spec: ServerSpec): {
  handler: (request: Request) => Promise<Response>;
  dispose: () => Promise<void>;
} {
  switch (spec.role) {
    case "upstream": {
      const fake = createFakeUpstreamHandler({
        maxModelLen: spec.contextLength,
      });
      return {
        // The fake records every request (whole bodies): forget each at once,
        // so a long run holds none of them.
        handler: (request) =>
          fake.handler(request).finally(() => fake.requests.length = 0),
        dispose: () => Promise.resolve(),
      };
    }
    case "bare":
      return { handler: bare(spec.upstream), dispose: () => Promise.resolve() };
    case "incontext": {
      // examples/server.ts uses the shared, worker-backed count cache.
      const cache = spec.cache === "worker"
        ? sharedCountCache()
        : createCountCache({ inProcess: true });
      const backend = new VllmBackend({
        url: `${spec.upstream}/tokenize`,
        cache,
      });
      const handler = createProxyHandler({
        upstream: spec.upstream,
        window: spec.window,
        contextLength: spec.contextLength,
        backend,
        cache,
      });
      return {
        handler,
        dispose: async () => await cache[Symbol.asyncDispose](),
      };
    }
  }
}

/** What any proxy costs: the same method, headers and body to the upstream, the response back as is. */
function bare(upstream: string): (request: Request) => Promise<Response> {
  return function bareProxy(request) {
    const url = new URL(request.url);
    const init: RequestInit & { duplex?: "half" } = {
      method: request.method,
      headers: request.headers,
      redirect: "manual",
    };
    if (request.body !== null) {
      init.body = request.body;
      init.duplex = "half";
    }
    return fetch(`${upstream}${url.pathname}${url.search}`, init);
  };
}
