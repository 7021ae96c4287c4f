// Covers: src/cache/capability.ts, src/cache/key.ts
/**
 * A count the in-process cache holds is read at once (no deadline, no
 * protocol round trip); every other cache, and every other case, takes the
 * usual path.
 */
import {
  type CountCache,
  countCacheKey,
  createCountCache,
} from "../../src/cache/mod.ts";
import { VllmBackend } from "../../src/backends/vllm/mod.ts";
import { serveFakeUpstream } from "../../src/testing/mod.ts";
import { peekCount } from "../../src/cache/capability.ts";
import { hashCountKey } from "../../src/cache/key.ts";
import { deepStrictEqual, rejects, strictEqual } from "node:assert/strict";

Deno.test("peekCount() reads an in-process cache's stored count as a hit, and nothing else", async (t) => {
  await using cache = createCountCache({ inProcess: true });
  const key = "k";
  await t.step("before any count: undefined, the key not even made", () => {
    let made = 0;
    strictEqual(peekCount(cache, () => (made++, key)), undefined);
    // The core opens on the first count: there is nothing to read yet.
    strictEqual(made, 0);
  });
  strictEqual(await cache.getOrCount(key, () => Promise.resolve(7)), 7);
  await t.step("a stored count is read and counted as a hit", async () => {
    const before = await cache.stats();
    strictEqual(peekCount(cache, () => key), 7);
    const after = await cache.stats();
    strictEqual(after.hits, before.hits + 1);
    strictEqual(after.misses, before.misses);
  });
  await t.step(
    "a miss is undefined and not counted (the count that follows counts it)",
    async () => {
      const before = await cache.stats();
      strictEqual(peekCount(cache, () => "other"), undefined);
      deepStrictEqual(await cache.stats(), before);
    },
  );
  await t.step("a key that cannot be made is undefined, never a throw", () => {
    strictEqual(
      peekCount(cache, () => {
        throw new RangeError("bad");
      }),
      undefined,
    );
  });
  await t.step("no cache, or a cache of another kind: undefined", () => {
    strictEqual(peekCount(null, () => key), undefined);
    const other: CountCache = {
      kind: "in-process",
      getOrCount: () => Promise.resolve(1),
      clear: () => Promise.resolve(),
      stats: () => Promise.reject(new Error("unused")),
      [Symbol.asyncDispose]: () => Promise.resolve(),
    };
    strictEqual(peekCount(other, () => key), undefined);
  });
  await cache[Symbol.asyncDispose]();
  await t.step("a disposed cache: undefined", () => {
    strictEqual(peekCount(cache, () => key), undefined);
  });
});

Deno.test("peekCount() never answers for a worker cache (its answers take a round trip)", async () => {
  await using cache = createCountCache();
  const key = await countCacheKey("s", 8, "p");
  strictEqual(await cache.getOrCount(key, () => Promise.resolve(3)), 3);
  let made = 0;
  strictEqual(peekCount(cache, () => (made++, key)), undefined);
  strictEqual(made, 0);
});

Deno.test("hashCountKey() is the key countCacheKey() resolves to", async () => {
  strictEqual(
    hashCountKey("vllm-tokenize", 8192, '{"messages":[]}'),
    await countCacheKey("vllm-tokenize", 8192, '{"messages":[]}'),
  );
});

Deno.test("an HTTP backend answers a stored count from an in-process cache at once, and still honours an aborted signal", async () => {
  await using upstream = await serveFakeUpstream({ maxModelLen: 8192 });
  await using cache = createCountCache({ inProcess: true });
  const backend = new VllmBackend({ url: upstream.tokenizeUrl, cache });
  const request = { messages: [{ role: "user", content: "Hello there" }] };
  const first = await backend.count(request, { contextLength: 8192 });
  const asked = upstream.requests.length;
  const before = await cache.stats();
  strictEqual(await backend.count(request, { contextLength: 8192 }), first);
  strictEqual(upstream.requests.length, asked);
  const after = await cache.stats();
  strictEqual(after.hits, before.hits + 1);
  strictEqual(after.misses, before.misses);
  // A caller that gave up gets its abort, not a stored count.
  const controller = new AbortController();
  controller.abort();
  await rejects(
    backend.count(request, {
      contextLength: 8192,
      signal: controller.signal,
    }),
    /aborted/,
  );
});
