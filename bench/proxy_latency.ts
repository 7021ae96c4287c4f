/**
 * Added latency of the incontext proxy on a count-cache hit, and streaming
 * time to first byte. Real servers on port 0, each in its own Worker (its own
 * thread, as a separate process would be): the fake vLLM upstream, a bare
 * byte-for-byte pass-through proxy (`fetch` the upstream with the same
 * method, headers and body, return its response: what any proxy costs), and
 * the incontext proxy with the shared worker-backed count cache and with
 * the in-process cache (as examples/server.ts). The client is `fetch` on
 * the main thread; requests are sequential, the paths interleaved round by
 * round so drift hits all alike. The upstream forgets each request it
 * records as soon as it has answered it.
 *
 *     deno run --allow-net=127.0.0.1 --allow-read bench/proxy_latency.ts
 */
import {
  added,
  type BenchServer,
  chatBody,
  ms,
  percentile,
  post,
  printMachine,
  printTable,
  startServers,
  timeFirstByte,
  timeRequest,
} from "./_proxy_bench_setup.ts";

const SAMPLES = 400;
const WARMUP = 50;
const TTFB_SAMPLES = 300;

const started = performance.now();
printMachine();

await using servers = await startServers();
const { upstream, bare, incontext, inProcess } = servers;

type Path = readonly [label: string, server: BenchServer];
const DIRECT = "direct to the upstream";
const BARE = "bare pass-through proxy";
const INCONTEXT = "incontext proxy (worker count cache)";
const SERVER =
  "incontext proxy (in-process count cache, as examples/server.ts)";
const latencyPaths: readonly Path[] = [
  [DIRECT, upstream],
  [BARE, bare],
  [INCONTEXT, incontext],
  [SERVER, inProcess],
];

/** Runs `measure` on every path, `rounds` times, rotating the order each round. */
async function interleave(
  paths: readonly Path[],
  rounds: number,
  measure: (root: string) => Promise<number>,
): Promise<Map<string, number[]>> {
  const samples = new Map(paths.map(([label]) => [label, [] as number[]]));
  for (let round = 0; round < rounds; round++) {
    for (let i = 0; i < paths.length; i++) {
      const [label, server] = paths[(round + i) % paths.length]!;
      samples.get(label)!.push(await measure(server.url));
    }
  }
  return samples;
}

/** Fills both proxies' count caches with `body` and checks they budget it. */
async function fillCaches(body: Uint8Array<ArrayBuffer>): Promise<void> {
  for (const proxy of [incontext, inProcess]) {
    const action = (await post(proxy.url, body)).headers.get(
      "x-incontext-action",
    );
    if (action !== "set") {
      throw new Error(`expected x-incontext-action: set, got ${action}`);
    }
  }
}

async function cacheMisses(proxy: BenchServer): Promise<number> {
  const text = await (await fetch(`${proxy.url}/incontext/metrics`)).text();
  const line = text.split("\n").find((l) =>
    l.startsWith("incontext_cache_misses_total ")
  );
  return Number(line?.split(" ")[1]);
}

function rowsOf(
  label: string,
  samples: Map<string, number[]>,
  paths: readonly Path[],
): string[][] {
  const p50 = (path: string) => percentile(samples.get(path)!, 0.5);
  return paths.map(([path]) => {
    const own = samples.get(path)!;
    const isBaseline = path === DIRECT;
    return [
      label,
      path,
      ms(percentile(own, 0.5)),
      ms(percentile(own, 0.99)),
      isBaseline ? "" : added(p50(path) - p50(DIRECT)),
      isBaseline || path === BARE ? "" : added(p50(path) - p50(BARE)),
    ];
  });
}

const SIZES = [["~2 KB", 2_000], ["~40 KB", 40_000], [
  "~500 KB",
  500_000,
]] as const;

/** Count-cache misses of both proxies while measuring: 0 when every sample hit. */
let timedMisses = 0;
async function measured<T>(run: () => Promise<T>): Promise<T> {
  const before = await cacheMisses(incontext) + await cacheMisses(inProcess);
  const result = await run();
  const after = await cacheMisses(incontext) + await cacheMisses(inProcess);
  timedMisses += after - before;
  return result;
}

const latencyRows: string[][] = [];
for (const [label, bytes] of SIZES) {
  const body = chatBody(bytes);
  await fillCaches(body);
  await interleave(latencyPaths, WARMUP, (root) => timeRequest(root, body));
  const samples = await measured(() =>
    interleave(latencyPaths, SAMPLES, (root) => timeRequest(root, body))
  );
  latencyRows.push(
    ...rowsOf(`${label} (${body.byteLength} B)`, samples, latencyPaths),
  );
}

const ttfbPaths: readonly Path[] = [
  [DIRECT, upstream],
  [BARE, bare],
  [SERVER, inProcess],
];
const ttfbRows: string[][] = [];
for (const [label, bytes] of SIZES.slice(0, 2)) {
  const body = chatBody(bytes, { stream: true });
  await fillCaches(body);
  await interleave(ttfbPaths, WARMUP, (root) => timeFirstByte(root, body));
  const samples = await measured(() =>
    interleave(ttfbPaths, TTFB_SAMPLES, (root) => timeFirstByte(root, body))
  );
  ttfbRows.push(
    ...rowsOf(`${label} (${body.byteLength} B)`, samples, ttfbPaths),
  );
}

console.log(
  `\nNon-streamed chat completions, count-cache hit: ${SAMPLES} sequential samples per path after ${WARMUP} warm-up rounds`,
);
printTable(
  [
    "body",
    "path",
    "p50",
    "p99",
    "added p50 over direct",
    "added p50 over bare proxy",
  ],
  latencyRows,
);
console.log(
  `\nStreamed (stream: true, include_usage), time to the first body chunk, count-cache hit: ${TTFB_SAMPLES} samples per path`,
);
printTable(
  [
    "body",
    "path",
    "TTFB p50",
    "TTFB p99",
    "added p50 over direct",
    "added p50 over bare proxy",
  ],
  ttfbRows,
);
console.log(
  `\nCount-cache misses of the two proxies during the timed samples: ${timedMisses} (0: every sample was a cache hit)`,
);
console.log(`runtime: ${((performance.now() - started) / 1000).toFixed(1)} s`);
