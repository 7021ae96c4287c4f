/**
 * budget() latency on a cache hit, against the same run's JSON.stringify of
 * the request as the baseline, and 100 concurrent identical calls on a cold
 * cache (exactly one /tokenize request). Prints p50/p99 and ratios.
 *
 *     npx --yes deno@2.9.6 run --allow-net=127.0.0.1 --allow-read bench/budget_latency.ts
 */
import { budget } from "../mod.ts";
import { createCountCache } from "../src/cache/mod.ts";
import { VllmBackend } from "../src/backends/vllm/mod.ts";
import { serveFakeVllmTokenizer } from "../src/testing/mod.ts";
import { agentRequest } from "./_requests.ts";

const ITERATIONS = 400;
const CONTEXT = 262144;
const WINDOW = 196608;

function percentile(samples: number[], p: number): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;
}

async function time(run: () => unknown): Promise<number[]> {
  const samples: number[] = [];
  for (let i = 0; i < ITERATIONS + 50; i++) {
    const start = performance.now();
    await run();
    if (i >= 50) samples.push(performance.now() - start); // the first 50 warm up
  }
  return samples;
}

await using server = await serveFakeVllmTokenizer({ maxModelLen: CONTEXT });
await using cache = createCountCache();
const backend = new VllmBackend({ url: server.url, cache });
const options = { window: WINDOW, contextLength: CONTEXT, backend };

const rows: string[] = [];
for (
  const [label, bytes] of [["~10k tokens (40 KB)", 40_000], [
    "~128k tokens (500 KB)",
    500_000,
  ]] as const
) {
  const request = agentRequest(bytes);
  await budget(request, options); // fill the cache
  const baseline = await time(() => JSON.stringify(request));
  const hit = await time(() => budget(request, options));
  const b50 = percentile(baseline, 0.5);
  const h50 = percentile(hit, 0.5);
  rows.push(
    `| budget() cache hit, ${label} | ${h50.toFixed(3)} ms | ${
      percentile(hit, 0.99).toFixed(3)
    } ms | ${b50.toFixed(3)} ms | ${(h50 / b50).toFixed(2)}x |`,
  );
}

const cold: number[] = [];
for (let round = 0; round < 20; round++) {
  const request = agentRequest(40_000, `round ${round}`);
  server.requests.length = 0;
  const start = performance.now();
  await Promise.all(
    Array.from({ length: 100 }, () => budget(request, options)),
  );
  cold.push(performance.now() - start);
  if (server.requests.length !== 1) {
    throw new Error(
      `expected one /tokenize request, saw ${server.requests.length}`,
    );
  }
}
rows.push(
  `| 100 concurrent identical budget() calls, cold cache, 40 KB (1 /tokenize each round) | ${
    percentile(cold, 0.5).toFixed(3)
  } ms | ${percentile(cold, 0.99).toFixed(3)} ms | | |`,
);

console.log(
  `cache kind: ${cache.kind}; ${ITERATIONS} samples after 50 warm-up runs`,
);
console.log(
  "| case | p50 | p99 | baseline p50 (JSON.stringify of the request) | ratio |",
);
console.log("| --- | --- | --- | --- | --- |");
for (const row of rows) console.log(row);
