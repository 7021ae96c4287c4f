/**
 * Throughput with 64 concurrent clients at 2 KB on a count-cache hit:
 * requests per second direct to the fake vLLM upstream, through a bare
 * pass-through proxy, and through the incontext proxy (with the shared
 * worker-backed count cache, and with the in-process cache, as
 * examples/server.ts). Each server runs in its own Worker;
 * the 64 clients are `fetch` loops on the main thread, so client, proxy and
 * upstream share the machine's cores. Every run is bounded in count
 * (64 x 400 requests) and in time (4 s); the paths run twice, in the
 * order A B C D D C B A, so drift hits all alike. The upstream forgets each request
 * it records as soon as it has answered it.
 *
 *     deno run --allow-net=127.0.0.1 --allow-read bench/proxy_throughput.ts
 */
import {
  chatBody,
  post,
  printMachine,
  printTable,
  startServers,
} from "./_proxy_bench_setup.ts";

const CLIENTS = 64;
const PER_CLIENT = 400;
const WARMUP_PER_CLIENT = 5;
const MAX_SECONDS = 4;

const started = performance.now();
printMachine();

await using servers = await startServers();
const { upstream, bare, incontext, inProcess, served } = servers;

const body = chatBody(2_000);
// Fills the count caches.
await post(incontext.url, body);
await post(inProcess.url, body);
await post(served.url, body);

interface Run {
  readonly requests: number;
  readonly seconds: number;
}

/** `clients` loops of at most `perClient` requests each, stopping at `maxSeconds`. */
async function load(
  root: string,
  perClient: number,
  maxSeconds: number,
): Promise<Run> {
  const start = performance.now();
  const deadline = start + maxSeconds * 1000;
  let requests = 0;
  await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      for (let i = 0; i < perClient && performance.now() < deadline; i++) {
        await post(root, body);
        requests++;
      }
    }),
  );
  return { requests, seconds: (performance.now() - start) / 1000 };
}

const DIRECT = "direct to the upstream";
const BARE = "bare pass-through proxy";
const INCONTEXT = "incontext proxy (worker count cache)";
const paths = [
  [DIRECT, upstream],
  [BARE, bare],
  [INCONTEXT, incontext],
  [
    "incontext proxy (in-process count cache), Deno.serve",
    inProcess,
  ],
  [
    "incontext proxy (in-process count cache), node:http with its bounds, as incontext serve",
    served,
  ],
] as const;
const runs = new Map<string, Run[]>(paths.map(([label]) => [label, []]));
for (const order of [paths, [...paths].reverse()]) {
  for (const [label, server] of order) {
    await load(server.url, WARMUP_PER_CLIENT, MAX_SECONDS);
    runs.get(label)!.push(await load(server.url, PER_CLIENT, MAX_SECONDS));
  }
}

function rate(label: string): number {
  const all = runs.get(label)!;
  const requests = all.reduce((sum, run) => sum + run.requests, 0);
  const seconds = all.reduce((sum, run) => sum + run.seconds, 0);
  return requests / seconds;
}

console.log(
  `\n${CLIENTS} concurrent clients, ~2 KB chat completions (${body.byteLength} B), count-cache hit; two runs per path of at most ${CLIENTS} x ${PER_CLIENT} requests or ${MAX_SECONDS} s each`,
);
printTable(
  ["path", "requests/s", "runs (requests in seconds)", "ratio to direct"],
  paths.map(([label]) => [
    label,
    rate(label).toFixed(0),
    runs.get(label)!.map((run) =>
      `${run.requests} in ${run.seconds.toFixed(2)} s`
    )
      .join(", "),
    `${(rate(label) / rate(DIRECT)).toFixed(2)}x`,
  ]),
);
console.log(
  `incontext over the bare proxy: ${
    (rate(INCONTEXT) / rate(BARE)).toFixed(2)
  }x`,
);
console.log(`runtime: ${((performance.now() - started) / 1000).toFixed(1)} s`);
