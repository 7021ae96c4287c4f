/**
 * The proxy under load, timed: 10,000 streamed requests from 200 concurrent
 * clients through examples/server.ts as a child process, against an upstream
 * seeded to delay 10% of answers by 50-500 ms, cut 5% mid-stream and answer
 * 5% with 5xx; 200 sequential requests first, for the cost without queueing.
 * Prints the wall time, the outcomes, the latency the proxy adds (client
 * time minus the upstream's own) and the proxy's RSS. What is asserted about
 * the same traffic, on any machine, is tests/reliability/proxy_load_test.ts.
 *
 *     npx --yes deno@2.9.6 run --config tests/deno.json -A bench/proxy_load.ts
 */
import {
  loadBody,
  type Outcome,
  request,
  SEEDED_FAULTS,
  serveTimedUpstream,
} from "../tests/reliability/_proxy_load.ts";
import { judge, latency, tally } from "../tests/reliability/_proxy_verdict.ts";
import { sampleRss, spawnProxy } from "../tests/reliability/_proxy_spawn.ts";

const TOTAL = 10_000;
const CLIENTS = 200;
const SEQUENTIAL = 200;
const TIMEOUT_MS = 120_000;
const MIB = 1024 * 1024;

await using upstream = serveTimedUpstream(SEEDED_FAULTS);
await using proxy = await spawnProxy(upstream.url, {
  INCONTEXT_TOKENIZER_URL: `${upstream.url}/tokenize`,
});
const target = `${proxy.url}/v1/chat/completions`;
const sampler = await sampleRss(proxy);
const rss = sampler.samples;

const sequential: Outcome[] = [];
for (let n = 0; n < SEQUENTIAL; n++) {
  const id = `seq-${n}`;
  sequential.push(
    await request(target, id, loadBody(id), { timeoutMs: TIMEOUT_MS }),
  );
}
const outcomes: Outcome[] = [];
const started = performance.now();
let issued = 0;
await Promise.all(Array.from({ length: CLIENTS }, async () => {
  while (issued < TOTAL) {
    const id = String(issued++).padStart(6, "0");
    outcomes.push(
      await request(target, id, loadBody(id), { timeoutMs: TIMEOUT_MS }),
    );
  }
}));
const seconds = (performance.now() - started) / 1000;
await sampler.stop();

const alone = await judge(sequential, upstream);
const loaded = await judge(outcomes, upstream);
const broken = [...alone, ...loaded].filter((v) => v.broken).length;
console.log([
  `proxy load: ${TOTAL} requests from ${CLIENTS} concurrent streaming clients in ${
    seconds.toFixed(1)
  } s (${Math.round(TOTAL / seconds)} req/s)`,
  `  outcomes: ${tally(loaded)}; broken promises: ${broken}`,
  `  added latency, 1 client: ${latency(alone)}`,
  `  added latency, ${CLIENTS} clients: ${latency(loaded)}`,
  `  proxy RSS: start ${(rss[0]! / MIB).toFixed(0)} MiB, peak ${
    (Math.max(...rss) / MIB).toFixed(0)
  } MiB (${rss.length} samples)`,
].join("\n"));
