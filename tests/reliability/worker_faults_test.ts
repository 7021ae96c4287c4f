/**
 * Worker faults: the count cache's worker dies while counts are in flight.
 * Every call settles, none hangs, the next call gets a fresh worker, and the
 * cache's bounds hold in it.
 */
import { deepStrictEqual, rejects, strictEqual } from "node:assert/strict";
import { budget, type BudgetOptions, CountError } from "../../mod.ts";
import type { CountCache } from "../../src/cache/mod.ts";
import { VllmBackend } from "../../src/backends/vllm/mod.ts";
import {
  createCountCacheForTesting,
  terminateCountWorkerForTesting,
} from "../../src/testing/mod.ts";
import { resultProblem } from "./_fuzz_invariants.ts";
import { serveHeldTokenizer } from "./_tokenizer_held.ts";
import { settleWithin } from "./_tokenizer_guard.ts";
import { HANG_MS } from "../_kit/hang.ts";

const CONTEXT = 65_536;
const WINDOW = 55_705;
const MIN_OUTPUT = 4096;
const PROMPT_TOKENS = 1000;
const GUARD_MS = HANG_MS;
const IN_FLIGHT = 100;
const MAX_ENTRIES = 32;
/** Room for 23 of the vLLM backend's 64-character keys: the byte bound binds first. */
const MAX_KEY_BYTES = 1500;

function chat(n: number) {
  return { model: "qwen", messages: [{ role: "user", content: `ask ${n}` }] };
}

/** Resolves once the worker has seen `misses` lookups: they are in its flights. */
async function missesReach(cache: CountCache, misses: number): Promise<void> {
  // Each stats() is a round trip to the worker, never a sleep.
  while ((await cache.stats()).misses < misses) continue;
}

Deno.test("a count worker killed with 100 counts in flight takes no call down", async (t) => {
  await using tokenizer = await serveHeldTokenizer({
    maxModelLen: CONTEXT,
    countTokens: () => PROMPT_TOKENS,
  });
  await using cache = createCountCacheForTesting({
    maxEntries: MAX_ENTRIES,
    maxKeyBytes: MAX_KEY_BYTES,
  });
  const backend = new VllmBackend({ url: tokenizer.url, cache });
  const options: BudgetOptions = {
    window: WINDOW,
    contextLength: CONTEXT,
    backend,
  };

  await t.step(
    "budget() calls settle: waiters by the fallback, leaders with their count",
    async () => {
      // 100 leaders hold 100 requests at the tokenizer; 100 waiters join their flights.
      const leaders = Array.from(
        { length: IN_FLIGHT },
        (_, n) => budget(chat(n), options),
      );
      await settleWithin(tokenizer.arrived(IN_FLIGHT), GUARD_MS, "arrivals");
      const waiters = Array.from(
        { length: IN_FLIGHT },
        (_, n) => budget(chat(n), options),
      );
      await settleWithin(missesReach(cache, 2 * IN_FLIGHT), GUARD_MS, "joins");
      await terminateCountWorkerForTesting(cache);
      // The tokenizer still holds every request: the waiters cannot hang on it.
      const fallen = await settleWithin(
        Promise.all(waiters),
        GUARD_MS,
        "waiters",
      );
      strictEqual(tokenizer.requests.length, 0);
      tokenizer.release();
      const counted = await settleWithin(
        Promise.all(leaders),
        GUARD_MS,
        "leaders",
      );
      fallen.forEach((result, n) => {
        strictEqual(result.source, "rough-fallback");
        strictEqual(
          resultProblem(chat(n), result, backend, MIN_OUTPUT),
          undefined,
        );
      });
      for (const result of counted) {
        strictEqual(result.source, "vllm-tokenize");
        strictEqual(result.maxTokens, WINDOW - PROMPT_TOKENS);
      }
      strictEqual(tokenizer.requests.length, IN_FLIGHT);
    },
  );

  await t.step(
    "cache.getOrCount() waiters reject with a CountError",
    async () => {
      const gate = Promise.withResolvers<number>();
      const misses = (await cache.stats()).misses;
      const leaders = Array.from(
        { length: 10 },
        (_, n) => cache.getOrCount(`key ${n}`, () => gate.promise),
      );
      const never = () => Promise.reject(new Error("a waiter never computes"));
      const waiters = Array.from(
        { length: IN_FLIGHT - 10 },
        (_, n) => cache.getOrCount(`key ${n % 10}`, never),
      );
      await settleWithin(
        missesReach(cache, misses + IN_FLIGHT),
        GUARD_MS,
        "joins",
      );
      await terminateCountWorkerForTesting(cache);
      for (const waiter of waiters) {
        await rejects(
          settleWithin(waiter, GUARD_MS, "waiter"),
          new CountError("The count worker stopped before it answered"),
        );
      }
      gate.resolve(7); // a leader's own count still reaches it
      deepStrictEqual(
        await settleWithin(Promise.all(leaders), GUARD_MS, "leaders"),
        Array(10).fill(7),
      );
    },
  );

  await t.step("the next call gets a fresh worker that counts", async () => {
    // Counts that finished after the crash died with their worker.
    deepStrictEqual(await cache.stats(), {
      entries: 0,
      keyBytes: 0,
      hits: 0,
      misses: 0,
      epoch: 0,
      modelLoads: 0,
      segmentHits: 0,
      segmentMisses: 0,
    });
    strictEqual(cache.kind, "worker_threads");
    const first = await budget(chat(0), options);
    const again = await budget(chat(0), options);
    strictEqual(first.source, "vllm-tokenize");
    deepStrictEqual(again, first);
    strictEqual(tokenizer.requests.length, IN_FLIGHT + 1, "the second hit");
  });

  await t.step("the fresh worker keeps the entry and byte bounds", async () => {
    await Promise.all(
      Array.from({ length: 100 }, (_, n) => budget(chat(1000 + n), options)),
    );
    const hashed = await cache.stats();
    strictEqual(hashed.entries, Math.floor(MAX_KEY_BYTES / 64));
    strictEqual(hashed.keyBytes, Math.floor(MAX_KEY_BYTES / 64) * 64);
    for (let n = 0; n < 100; n++) {
      await cache.getOrCount(`k${n}`, () => Promise.resolve(n));
    }
    // The last 32 keys, k68 to k99, of 3 bytes each.
    const short = await cache.stats();
    strictEqual(short.entries, MAX_ENTRIES);
    strictEqual(short.keyBytes, MAX_ENTRIES * 3);
    await cache.getOrCount(
      "x".repeat(MAX_KEY_BYTES + 1),
      () => Promise.resolve(1),
    );
    strictEqual((await cache.stats()).entries, MAX_ENTRIES, "never stored");
  });
});
