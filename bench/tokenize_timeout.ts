/**
 * How far past its timeout a count is given up on: `budget()` calls against a
 * `/tokenize` server that holds every request (the fake's "slow" fault), with
 * the backend's `timeoutSeconds: 0.5`, 20 calls at once, 10 rounds. The
 * overshoot is each call's time minus the 500 ms timeout: the timer's own
 * lateness plus the fallback's work. That the call falls back at all is
 * asserted by tests/reliability/tokenizer_faults_test.ts, on any machine.
 *
 *     npx --yes deno@2.9.6 run --allow-net=127.0.0.1 --allow-read --allow-env bench/tokenize_timeout.ts
 */
import { budget } from "../mod.ts";
import { createCountCache } from "../src/cache/mod.ts";
import { VllmBackend } from "../src/backends/vllm/mod.ts";
import { serveFakeVllmTokenizer } from "../src/testing/mod.ts";

const CONTEXT = 65_536;
const TIMEOUT_SECONDS = 0.5;
const CALLS = 20;
const ROUNDS = 10;

function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.max(1, Math.ceil((p / 100) * sorted.length)) - 1]!;
}

await using server = await serveFakeVllmTokenizer({
  maxModelLen: CONTEXT,
  fault: "slow",
});
await using cache = createCountCache();
// The worker starts once per process, not per count: start it before the clock runs.
await cache.stats();
const backend = new VllmBackend({
  url: server.url,
  timeoutSeconds: TIMEOUT_SECONDS,
  cache,
});
const overshoot: number[] = [];
for (let round = 0; round < ROUNDS; round++) {
  await Promise.all(Array.from({ length: CALLS }, async (_, n) => {
    const request = {
      model: "qwen",
      messages: [{ role: "user", content: `round ${round}, call ${n}` }],
    };
    const started = performance.now();
    const result = await budget(request, {
      window: 55_705,
      contextLength: CONTEXT,
      backend,
    });
    if (result.source !== "rough-fallback") {
      throw new Error(`expected the fallback, got ${result.source}`);
    }
    overshoot.push(performance.now() - started - TIMEOUT_SECONDS * 1000);
  }));
}
console.log(
  `tokenize timeout: overshoot past ${TIMEOUT_SECONDS} s: p50 ${
    percentile(overshoot, 50).toFixed(1)
  } ms, p99 ${percentile(overshoot, 99).toFixed(1)} ms, max ${
    Math.max(...overshoot).toFixed(1)
  } ms (${overshoot.length} calls)`,
);
