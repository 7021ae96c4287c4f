import type { Backend } from "../../mod.ts";
import { createCountCache } from "../../src/cache/mod.ts";
import { VllmBackend } from "../../src/backends/vllm/mod.ts";
import { createProxyHandler, type ProxyOptions } from "../../src/proxy/mod.ts";
import { type FakeUpstream, serveFakeUpstream } from "../../src/testing/mod.ts";

export const W = 55705;
export const C = 65536;

/** A fake vLLM upstream and the proxy in front of it, both real servers on port 0. */
export interface ProxyFixture extends AsyncDisposable {
  readonly upstream: FakeUpstream;
  /** The proxy's root, `http://127.0.0.1:<port>`. */
  readonly url: string;
  /** The OpenAI SDK base URL through the proxy. */
  readonly baseUrl: string;
}

export async function proxyFixture(
  overrides: Partial<ProxyOptions> & { backend?: Backend } = {},
): Promise<ProxyFixture> {
  const upstream = await serveFakeUpstream({ maxModelLen: C });
  const cache = createCountCache({ inProcess: true });
  const backend = overrides.backend ??
    new VllmBackend({ url: upstream.tokenizeUrl, cache });
  const handler = createProxyHandler({
    upstream: upstream.url,
    window: W,
    contextLength: C,
    cache,
    ...overrides,
    backend,
  });
  const server = Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen() {} },
    handler,
  );
  const url = `http://127.0.0.1:${server.addr.port}`;
  return {
    upstream,
    url,
    baseUrl: `${url}/v1`,
    async [Symbol.asyncDispose]() {
      await server.shutdown();
      await upstream[Symbol.asyncDispose]();
      await cache[Symbol.asyncDispose]();
    },
  };
}

export function postJson(
  url: string,
  body: unknown,
  init: RequestInit = {},
): Promise<Response> {
  return fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: typeof body === "string" ? body : JSON.stringify(body),
    ...init,
  });
}
