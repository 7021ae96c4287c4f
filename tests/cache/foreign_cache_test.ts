// Covers: src/cache/capability.ts, src/cache/types.ts
// A count cache is any object with the CountCache members. One of another
// make, without the optional core, still serves every count, and the work the
// core would run happens on the caller's thread; one that offers the core
// (here: a wrapper around the package's own) gets the core's work.
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import {
  COUNT_CACHE_CORE,
  type CountCache,
  type CountCacheStats,
  createCountCache,
} from "../../src/cache/mod.ts";
import { attachCountTier } from "../../src/cache/capability.ts";
import { LocalBackend } from "../../src/backends/local/mod.ts";
import { VllmBackend } from "../../src/backends/vllm/mod.ts";
import { serveFakeUpstream } from "../../src/testing/mod.ts";

const DIR = new URL("../fixtures/model_folder/", import.meta.url).pathname;
const C = { contextLength: 8192 };
const REQUESTS = [
  { messages: [{ role: "user", content: "hello world" }] },
  {
    messages: [{ role: "user", content: "hello" }, {
      role: "user",
      content: "world",
    }],
  },
];

/** A cache of another make: a Map with singleflight, and no core. */
class MapCountCache implements CountCache {
  readonly kind = "in-process" as const;
  readonly counts = new Map<string, number>();
  readonly #flights = new Map<string, Promise<number>>();
  hits = 0;
  misses = 0;

  getOrCount(key: string, compute: () => Promise<number>): Promise<number> {
    const stored = this.counts.get(key);
    if (stored !== undefined) {
      this.hits++;
      return Promise.resolve(stored);
    }
    this.misses++;
    let flight = this.#flights.get(key);
    if (flight === undefined) {
      flight = compute().then((count) => {
        this.counts.set(key, count);
        return count;
      }).finally(() => this.#flights.delete(key));
      this.#flights.set(key, flight);
    }
    return flight;
  }

  clear(): Promise<void> {
    this.counts.clear();
    return Promise.resolve();
  }

  stats(): Promise<CountCacheStats> {
    return Promise.resolve({
      entries: this.counts.size,
      keyBytes: 0,
      hits: this.hits,
      misses: this.misses,
      epoch: 0,
      modelLoads: 0,
      segmentHits: 0,
      segmentMisses: 0,
    });
  }

  [Symbol.asyncDispose](): Promise<void> {
    return Promise.resolve();
  }
}

async function countAll(backend: LocalBackend): Promise<number[]> {
  const counts = [];
  for (const request of REQUESTS) counts.push(await backend.count(request, C));
  return counts;
}

Deno.test("LocalBackend counts through a cache of another make on its own thread", async () => {
  const foreign = new MapCountCache();
  await using backend = new LocalBackend({ dir: DIR, cache: foreign });
  await using alone = new LocalBackend({ dir: DIR, cache: null });
  const expected = await countAll(alone);
  deepStrictEqual(await countAll(backend), expected);
  // Every whole count went through the foreign cache, and is served from it.
  strictEqual(foreign.counts.size, REQUESTS.length);
  deepStrictEqual(await countAll(backend), expected);
  strictEqual(foreign.hits, REQUESTS.length);
});

Deno.test("an HTTP backend counts through a cache of another make, once per request", async () => {
  await using upstream = await serveFakeUpstream({ maxModelLen: 8192 });
  const foreign = new MapCountCache();
  const backend = new VllmBackend({
    url: upstream.tokenizeUrl,
    cache: foreign,
  });
  const first = await backend.count(REQUESTS[0]!, C);
  strictEqual(await backend.count(REQUESTS[0]!, C), first);
  strictEqual(upstream.requests.length, 1);
  strictEqual(foreign.hits, 1);
});

Deno.test("attachCountTier() leaves a cache of another make as it is", () => {
  const tier = {
    get: () => Promise.resolve(undefined),
    set: () => {},
  };
  strictEqual(attachCountTier(new MapCountCache(), tier), false);
});

Deno.test("a cache of another make that offers the core gets the core's work", async () => {
  await using inner = createCountCache({ inProcess: true });
  const wrapper: CountCache = {
    kind: inner.kind,
    getOrCount: (key, compute, signal) =>
      inner.getOrCount(key, compute, signal),
    clear: () => inner.clear(),
    stats: () => inner.stats(),
    [Symbol.asyncDispose]: () => Promise.resolve(),
    [COUNT_CACHE_CORE]: inner[COUNT_CACHE_CORE]!,
  };
  await using backend = new LocalBackend({ dir: DIR, cache: wrapper });
  await using alone = new LocalBackend({ dir: DIR, cache: null });
  deepStrictEqual(await countAll(backend), await countAll(alone));
  // The model folder loaded in the inner cache's core, not on this thread.
  strictEqual((await inner.stats()).modelLoads, 1);
  ok((await inner.stats()).entries >= REQUESTS.length);
});
