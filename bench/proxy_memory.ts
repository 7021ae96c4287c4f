/**
 * Memory of the incontext proxy over 100k requests with distinct
 * conversations: every count misses the count cache (a /tokenize call and a
 * new cache entry) and every response records a usage anchor, so both stores
 * fill to their bounds (1000 each here) and must then stay there. Prints the
 * process RSS and V8 heap at 0, 25k, 50k, 75k and 100k requests, with the
 * anchor store size (`GET /incontext/context` -> anchors.entries) and the
 * count cache entries (`cache.stats()`).
 *
 * To fit 100k requests in about a minute it runs in process, without
 * sockets: the proxy handler is called with `new Request(...)` and reaches
 * the fake vLLM upstream through the fake's own `fetch` (also the
 * VllmBackend's `fetch`), 8 requests in flight. Two things a real server
 * does between requests are done by hand: the fake records every request it
 * receives, so the record is cleared every 500 requests (it is not the
 * proxy's memory); and since nothing here waits on I/O, the loop yields to
 * the event loop every 100 requests, as a server's I/O would, or the whole
 * run would be one task. Every timer the request path sets (the count's
 * deadline, the upstream's timeouts) is cleared when its operation ends, so
 * the default `/tokenize` timeout (30 s) holds nothing past a request.
 * `globalThis.gc` runs before each reading when the V8 flag exposes it (the
 * bench task passes `--v8-flags=--expose-gc`); without it the readings
 * include garbage not yet collected.
 *
 *     deno run --v8-flags=--expose-gc bench/proxy_memory.ts
 */
import { createCountCache } from "../src/cache/mod.ts";
import { VllmBackend } from "../src/backends/vllm/mod.ts";
import { createProxyHandler } from "../src/proxy/mod.ts";
import { createFakeUpstreamHandler } from "../src/testing/mod.ts";
import {
  CONTEXT,
  printMachine,
  printTable,
  WINDOW,
} from "./_proxy_bench_setup.ts";

const REQUESTS = 100_000;
const CHECKPOINT = 25_000;
const IN_FLIGHT = 8;
const BOUND = 1000;
const CLEAR_EVERY = 500;
const YIELD_EVERY = 100;

const started = performance.now();
printMachine();

const fake = createFakeUpstreamHandler({ maxModelLen: CONTEXT });
await using cache = createCountCache({ inProcess: true, maxEntries: BOUND });
const backend = new VllmBackend({
  url: "http://upstream.invalid/tokenize",
  fetch: fake.fetch,
  cache,
});
const proxy = createProxyHandler({
  upstream: "http://upstream.invalid",
  window: WINDOW,
  contextLength: CONTEXT,
  backend,
  cache,
  fetch: fake.fetch,
  anchorEntries: BOUND,
});

const filler = "Please look at the build log and tell me what failed. ".repeat(
  8,
);

/** A distinct two-message conversation of about 600 bytes. */
function request(n: number): Request {
  return new Request("http://proxy.invalid/v1/chat/completions", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      model: "Qwen/Qwen3-8B",
      max_tokens: 4096,
      messages: [
        { role: "system", content: `You are agent number ${n}.` },
        { role: "user", content: `${filler}Conversation ${n}.` },
      ],
    }),
  });
}

async function send(n: number): Promise<void> {
  const response = await proxy(request(n));
  // Reading the body to its end is what records the anchor.
  await response.arrayBuffer();
  const action = response.headers.get("x-incontext-action");
  if (response.status !== 200 || action !== "set") {
    throw new Error(`request ${n}: ${response.status}, action ${action}`);
  }
}

interface Reading {
  readonly rss: number;
  readonly heapUsed: number;
  readonly anchors: number;
  readonly cacheEntries: number;
  readonly misses: number;
}

const gc = (globalThis as { gc?: () => void }).gc;

async function read(): Promise<Reading> {
  fake.requests.length = 0;
  // Twice: the first pass frees what finalizers still held.
  gc?.();
  gc?.();
  const { rss, heapUsed } = Deno.memoryUsage();
  const context = await (await proxy(
    new Request("http://proxy.invalid/incontext/context"),
  )).json();
  const stats = await cache.stats();
  return {
    rss,
    heapUsed,
    anchors: context.anchors.entries,
    cacheEntries: stats.entries,
    misses: stats.misses,
  };
}

const readings: [number, Reading][] = [[0, await read()]];
let next = 0;
const loopStart = performance.now();
for (let mark = CHECKPOINT; mark <= REQUESTS; mark += CHECKPOINT) {
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      while (next < mark) {
        const n = next++;
        await send(n);
        if (n % CLEAR_EVERY === 0) fake.requests.length = 0;
        if (n % YIELD_EVERY === 0) {
          await new Promise((resolve) => setTimeout(resolve, 0));
        }
      }
    }),
  );
  readings.push([mark, await read()]);
}
const loopSeconds = (performance.now() - loopStart) / 1000;

const mib = (bytes: number) => `${(bytes / 1048576).toFixed(1)} MiB`;
const first = readings[0]![1];
console.log(
  `\n${REQUESTS} requests with distinct conversations through the proxy handler in process (no sockets), ${IN_FLIGHT} in flight; anchorEntries ${BOUND}, count cache maxEntries ${BOUND}; gc before each reading: ${
    gc ? "yes" : "no (run with --v8-flags=--expose-gc)"
  }`,
);
printTable(
  [
    "requests",
    "RSS",
    "RSS growth",
    "V8 heap used",
    "anchors (entries / bound)",
    "count cache (entries / bound)",
    "count-cache misses",
  ],
  readings.map(([requests, r]) => [
    String(requests),
    mib(r.rss),
    `${r.rss >= first.rss ? "+" : ""}${mib(r.rss - first.rss)}`,
    mib(r.heapUsed),
    `${r.anchors} / ${BOUND}`,
    `${r.cacheEntries} / ${BOUND}`,
    String(r.misses),
  ]),
);
console.log(
  `${(REQUESTS / loopSeconds).toFixed(0)} requests/s in process; runtime: ${
    ((performance.now() - started) / 1000).toFixed(1)
  } s`,
);
