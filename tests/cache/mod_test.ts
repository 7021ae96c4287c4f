// Covers: src/cache/mod.ts, src/cache/key.ts, src/cache/client.ts
import { CountError } from "../../mod.ts";
import {
  type CountCache,
  countCacheKey,
  createCountCache,
  sharedCountCache,
} from "../../src/cache/mod.ts";
import {
  createCountCacheForTesting,
  terminateCountWorkerForTesting,
} from "../../src/testing/mod.ts";
import { configure, type LogRecord, reset } from "@logtape/logtape";
import { createHash } from "node:crypto";
import { countKeyMemoSize } from "../../src/cache/key.ts";
import {
  deepStrictEqual,
  match,
  notStrictEqual,
  ok,
  rejects,
  strictEqual,
} from "node:assert/strict";
import { HANG_MS } from "../_kit/hang.ts";

/** A compute whose result the test decides, and that says when it started. */
function gate(): {
  compute: () => Promise<number>;
  started: Promise<void>;
  resolve: (count: number) => void;
  reject: (error: unknown) => void;
  calls: () => number;
} {
  const result = Promise.withResolvers<number>();
  const started = Promise.withResolvers<void>();
  let calls = 0;
  return {
    compute: () => {
      calls++;
      started.resolve();
      return result.promise;
    },
    started: started.promise,
    resolve: result.resolve,
    reject: result.reject,
    calls: () => calls,
  };
}

function counter(
  count: number,
): { compute: () => Promise<number>; calls: () => number } {
  let calls = 0;
  return {
    compute: () => {
      calls++;
      return Promise.resolve(count);
    },
    calls: () => calls,
  };
}

/** The local-counting counters of a cache no local count used. */
const NO_LOCAL = { modelLoads: 0, segmentHits: 0, segmentMisses: 0 };

/** The behaviour both implementations share; `make` creates the cache under test. */
async function conformance(
  t: Deno.TestContext,
  make: (options?: { maxEntries?: number; maxKeyBytes?: number }) => CountCache,
): Promise<void> {
  await t.step("serves a hit without computing", async () => {
    await using cache = make();
    const first = counter(7);
    strictEqual(await cache.getOrCount("k", first.compute), 7);
    strictEqual(await cache.getOrCount("k", counter(8).compute), 7);
    strictEqual(first.calls(), 1);
    deepStrictEqual(await cache.stats(), {
      entries: 1,
      keyBytes: 1,
      hits: 1,
      misses: 1,
      epoch: 0,
      ...NO_LOCAL,
    });
  });

  await t.step(
    "evicts the least recently used entry beyond maxEntries",
    async () => {
      await using cache = make({ maxEntries: 2 });
      await cache.getOrCount("a", counter(1).compute);
      await cache.getOrCount("b", counter(2).compute);
      await cache.getOrCount("a", counter(0).compute); // a is now the most recent
      await cache.getOrCount("c", counter(3).compute);
      strictEqual(await cache.getOrCount("a", counter(0).compute), 1);
      strictEqual(await cache.getOrCount("b", counter(20).compute), 20);
      strictEqual((await cache.stats()).entries, 2);
    },
  );

  await t.step(
    "keeps the order through repeated hits on the newest entry",
    async () => {
      await using cache = make({ maxEntries: 2 });
      await cache.getOrCount("a", counter(1).compute);
      await cache.getOrCount("a", counter(0).compute); // the newest: stays
      await cache.getOrCount("b", counter(2).compute);
      await cache.getOrCount("a", counter(0).compute); // after "b" now
      await cache.getOrCount("a", counter(0).compute);
      await cache.getOrCount("c", counter(3).compute); // "b" goes
      strictEqual(await cache.getOrCount("a", counter(10).compute), 1);
      strictEqual(await cache.getOrCount("b", counter(20).compute), 20);
      await cache.clear();
      await cache.getOrCount("d", counter(4).compute);
      await cache.getOrCount("e", counter(5).compute);
      await cache.getOrCount("d", counter(0).compute);
      await cache.getOrCount("f", counter(6).compute); // "e" goes
      strictEqual(await cache.getOrCount("d", counter(40).compute), 4);
    },
  );

  await t.step("evicts by key bytes, counting UTF-8", async () => {
    await using cache = make({ maxKeyBytes: 10 });
    await cache.getOrCount("é€😀", counter(1).compute); // 2 + 3 + 4 bytes
    deepStrictEqual((await cache.stats()).keyBytes, 9);
    await cache.getOrCount("xy", counter(2).compute);
    deepStrictEqual(await cache.stats(), {
      entries: 1,
      keyBytes: 2,
      hits: 0,
      misses: 2,
      epoch: 0,
      ...NO_LOCAL,
    });
    await cache.getOrCount("a-key-of-11", counter(3).compute); // larger than the budget: never stored
    deepStrictEqual((await cache.stats()).entries, 1);
    strictEqual(await cache.getOrCount("xy", counter(0).compute), 2);
  });

  await t.step("runs one compute for 100 concurrent misses", async () => {
    await using cache = make();
    const count = counter(42);
    const counts = await Promise.all(
      Array.from({ length: 100 }, () => cache.getOrCount("k", count.compute)),
    );
    strictEqual(count.calls(), 1);
    ok(counts.every((value) => value === 42));
  });

  await t.step(
    "rejects every waiter with a failure and does not cache it",
    async () => {
      await using cache = make();
      const failure = new CountError(
        "vLLM /tokenize returned an invalid count",
      );
      const compute = () => Promise.reject(failure);
      const calls = Array.from(
        { length: 5 },
        () => cache.getOrCount("k", compute),
      );
      const settled = await Promise.allSettled(calls);
      strictEqual(
        settled[0]?.status === "rejected" && settled[0].reason,
        failure,
      );
      for (const result of settled.slice(1)) {
        ok(result.status === "rejected" && result.reason instanceof CountError);
        strictEqual(result.reason.message, failure.message);
      }
      strictEqual(await cache.getOrCount("k", counter(9).compute), 9);
    },
  );

  await t.step("rebuilds the error class for waiters", async () => {
    await using cache = make();
    const cases: [Error, (error: unknown) => boolean][] = [
      [new CountError("c"), (e) => e instanceof CountError],
      [
        new DOMException("t", "TimeoutError"),
        (e) => e instanceof DOMException && e.name === "TimeoutError",
      ],
      [
        new DOMException("a", "AbortError"),
        (e) => e instanceof DOMException && e.name === "AbortError",
      ],
      [new TypeError("y"), (e) => e instanceof TypeError],
      [new RangeError("r"), (e) => e instanceof RangeError],
      [
        Object.assign(new Error("o"), { name: "OtherError" }),
        (e) => e instanceof Error && e.name === "OtherError",
      ],
    ];
    for (const [error, isRebuilt] of cases) {
      const key = `k-${error.name}`;
      const leader = cache.getOrCount(key, () => Promise.reject(error));
      const waiter = cache.getOrCount(key, counter(0).compute);
      await rejects(leader, (e) => e === error);
      await rejects(
        waiter,
        (e) =>
          e !== error && isRebuilt(e) && (e as Error).message === error.message,
      );
    }
  });

  await t.step("rejects a compute that resolves to a non-count", async () => {
    await using cache = make();
    for (const bad of [-1, 1.5, Number.NaN]) {
      await rejects(
        cache.getOrCount("k", () => Promise.resolve(bad)),
        RangeError,
      );
    }
    strictEqual((await cache.stats()).entries, 0);
  });

  await t.step(
    "clear() returns an in-flight count but does not store it",
    async () => {
      await using cache = make();
      await cache.getOrCount("old", counter(1).compute);
      const pending = gate();
      const leader = cache.getOrCount("k", pending.compute);
      const waiter = cache.getOrCount("k", counter(0).compute);
      await pending.started;
      await cache.clear();
      const after = gate(); // a caller after the clear must not join the old count
      const fresh = cache.getOrCount("k", after.compute);
      await after.started;
      pending.resolve(5);
      deepStrictEqual(await Promise.all([leader, waiter]), [5, 5]);
      deepStrictEqual(await cache.stats(), {
        entries: 0,
        keyBytes: 0,
        hits: 0,
        misses: 4,
        epoch: 1,
        ...NO_LOCAL,
      });
      after.resolve(6);
      strictEqual(await fresh, 6);
      strictEqual(await cache.getOrCount("k", counter(0).compute), 6);
    },
  );

  await t.step("rejects only the waiter whose signal aborts", async () => {
    await using cache = make();
    const pending = gate();
    const controller = new AbortController();
    const leader = cache.getOrCount("k", pending.compute);
    const aborted = cache.getOrCount(
      "k",
      counter(0).compute,
      controller.signal,
    );
    const waiter = cache.getOrCount("k", counter(0).compute);
    await pending.started;
    controller.abort();
    await rejects(
      aborted,
      (e) => e instanceof DOMException && e.name === "AbortError",
    );
    pending.resolve(3);
    deepStrictEqual(await Promise.all([leader, waiter]), [3, 3]);
    await rejects(
      cache.getOrCount("k", counter(0).compute, AbortSignal.abort()),
      { name: "AbortError" },
    );
  });

  await t.step(
    "hands the count to a waiter when the leader aborts",
    async () => {
      await using cache = make();
      const controller = new AbortController();
      const started = Promise.withResolvers<void>();
      const leaderCompute = () => {
        started.resolve();
        return new Promise<number>((_, reject) =>
          controller.signal.addEventListener(
            "abort",
            () => reject(controller.signal.reason),
          )
        );
      };
      const leader = cache.getOrCount("k", leaderCompute, controller.signal);
      const waiter = counter(11);
      const waiting = cache.getOrCount("k", waiter.compute);
      await started.promise;
      controller.abort();
      await rejects(leader, { name: "AbortError" });
      strictEqual(await waiting, 11);
      strictEqual(waiter.calls(), 1);
      strictEqual(await cache.getOrCount("k", counter(0).compute), 11);
    },
  );

  await t.step("rejects pending calls on dispose", async () => {
    const cache = make();
    const pending = gate();
    const leader = cache.getOrCount("k", pending.compute);
    const waiter = cache.getOrCount("k", counter(0).compute);
    await pending.started;
    await cache[Symbol.asyncDispose]();
    await cache[Symbol.asyncDispose](); // idempotent
    await rejects(leader, CountError);
    await rejects(waiter, CountError);
    pending.resolve(1);
    await rejects(cache.getOrCount("k", counter(1).compute), CountError);
    await rejects(cache.clear(), CountError);
    await rejects(cache.stats(), CountError);
  });

  await t.step("validates its arguments", async () => {
    await using cache = make();
    await rejects(
      cache.getOrCount(1 as unknown as string, counter(1).compute),
      TypeError,
    );
    await rejects(
      cache.getOrCount("k", 1 as unknown as () => Promise<number>),
      TypeError,
    );
  });
}

Deno.test("createCountCache() behaves as a cache in a worker", async (t) => {
  await conformance(t, (options) => createCountCache(options));
});

Deno.test("createCountCache() behaves the same in process", async (t) => {
  await conformance(
    t,
    (options) => createCountCache({ ...options, inProcess: true }),
  );
});

Deno.test("createCountCache() runs in a worker_threads worker", async (t) => {
  await t.step("reports its kind", async () => {
    await using cache = createCountCache();
    strictEqual(cache.kind, "worker_threads");
    await cache.getOrCount("k", counter(1).compute);
    strictEqual(cache.kind, "worker_threads");
    await using local = createCountCache({ inProcess: true });
    strictEqual(local.kind, "in-process");
  });

  await t.step("replaces a terminated worker", async () => {
    await using cache = createCountCacheForTesting();
    await cache.getOrCount("cached", counter(1).compute);
    const pending = gate();
    const leader = cache.getOrCount("k", pending.compute);
    const waiter = cache.getOrCount("k", counter(0).compute);
    await pending.started;
    await terminateCountWorkerForTesting(cache);
    await rejects(waiter, CountError);
    pending.resolve(4); // the leader's own count still reaches it
    strictEqual(await leader, 4);
    const fresh = counter(2);
    strictEqual(await cache.getOrCount("cached", fresh.compute), 2);
    strictEqual(fresh.calls(), 1);
    strictEqual(cache.kind, "worker_threads");
    deepStrictEqual(await cache.stats(), {
      entries: 1,
      keyBytes: 6,
      hits: 0,
      misses: 1,
      epoch: 0,
      ...NO_LOCAL,
    });
  });

  await t.step(
    "terminateCountWorkerForTesting() crashes only a testing cache's worker",
    async () => {
      await using cache = createCountCache();
      await rejects(terminateCountWorkerForTesting(cache), TypeError);
      strictEqual(await cache.getOrCount("k", counter(5).compute), 5);
    },
  );

  await t.step("rejects invalid bounds", () => {
    for (const maxEntries of [0, -1, 1.5, Number.NaN]) {
      try {
        createCountCache({ maxEntries });
        ok(false, "expected a RangeError");
      } catch (error) {
        ok(error instanceof RangeError);
        match(error.message, /'maxEntries' must be a positive integer/);
      }
    }
  });
});

Deno.test("createCountCache() falls back in process when the worker cannot start", async (t) => {
  const records: LogRecord[] = [];
  await configure({
    sinks: { buffer: (record) => records.push(record) },
    loggers: [
      {
        category: ["incontext", "cache"],
        sinks: ["buffer"],
        lowestLevel: "warning",
      },
      { category: ["logtape", "meta"], sinks: [], lowestLevel: "warning" },
    ],
    reset: true,
  });
  try {
    const failing: [string, URL][] = [
      [
        "a missing module (an 'error' event)",
        new URL("./no_such_count_worker.js", import.meta.url),
      ],
      ["a module that exits at once", new URL("data:text/javascript,")],
      [
        "a URL the runtime refuses (a synchronous throw)",
        new URL("blob:count-worker"),
      ],
    ];
    for (const [name, url] of failing) {
      await t.step(name, async () => {
        records.length = 0;
        await using cache = createCountCacheForTesting({ workerUrl: url });
        const count = counter(3);
        const counts = await Promise.all(
          [1, 2, 3].map(() => cache.getOrCount("k", count.compute)),
        );
        deepStrictEqual(counts, [3, 3, 3]);
        strictEqual(count.calls(), 1);
        strictEqual(cache.kind, "in-process");
        strictEqual(await cache.getOrCount("k", counter(0).compute), 3);
        strictEqual(records.length, 1);
        strictEqual(records[0]?.level, "warning");
      });
    }
  } finally {
    await reset();
  }
});

Deno.test("sharedCountCache() returns one cache until it is disposed", async () => {
  const cache = sharedCountCache({ maxEntries: 10 });
  strictEqual(sharedCountCache(), cache);
  await cache.getOrCount("k", counter(1).compute);
  strictEqual(await sharedCountCache().getOrCount("k", counter(2).compute), 1);
  await cache[Symbol.asyncDispose]();
  const next = sharedCountCache();
  notStrictEqual(next, cache);
  strictEqual(await next.getOrCount("k", counter(2).compute), 2);
  await next[Symbol.asyncDispose]();
});

Deno.test("sharedCountCache() does not keep a process alive", async (t) => {
  const config = new URL("../../deno.json", import.meta.url).pathname;
  const module = new URL("../../src/cache/mod.ts", import.meta.url).href;
  const script = `
    import { sharedCountCache } from ${JSON.stringify(module)};
    const cache = sharedCountCache();
    const counts = await Promise.all([1, 2].map(() => cache.getOrCount("k", () => Promise.resolve(5))));
    console.log(cache.kind, counts.join(","), (await cache.stats()).entries);
  `;
  async function run(permissions: string[]): Promise<string> {
    // `deno run -` reads the script from stdin and, unlike `deno eval`, applies permissions.
    const child = new Deno.Command(Deno.execPath(), {
      args: ["run", "--config", config, ...permissions, "-"],
      stdin: "piped",
      stdout: "piped",
      stderr: "null",
      signal: AbortSignal.timeout(HANG_MS),
    }).spawn();
    const writer = child.stdin.getWriter();
    await writer.write(new TextEncoder().encode(script));
    await writer.close();
    const { code, stdout } = await child.output();
    strictEqual(code, 0);
    return new TextDecoder().decode(stdout).trim();
  }
  await t.step("with a worker", async () => {
    strictEqual(await run(["--allow-read"]), "worker_threads 5,5 1");
  });
  await t.step(
    "in process, when Deno may not read the worker file",
    async () => {
      strictEqual(await run([]), "in-process 5,5 1");
    },
  );
});

Deno.test("countCacheKey() hashes source, context length and payload", async () => {
  const key = await countCacheKey("vllm-tokenize", 8192, '{"a":1}');
  match(key, /^[0-9a-f]{64}$/);
  const expected = createHash("sha256").update(
    '["vllm-tokenize",8192]\n{"a":1}',
  ).digest("hex");
  strictEqual(key, expected);
  const others = await Promise.all([
    countCacheKey("other", 8192, '{"a":1}'),
    countCacheKey("vllm-tokenize", 4096, '{"a":1}'),
    countCacheKey("vllm-tokenize", 8192, '{"a": 1}'),
    countCacheKey("vllm-tokenize\n8192", 8192, '{"a":1}'),
  ]);
  strictEqual(new Set([key, ...others]).size, 5);
  await rejects(countCacheKey("s", 0, "{}"), RangeError);
  await rejects(countCacheKey("s", 1.5, "{}"), RangeError);
  await rejects(countCacheKey(1 as unknown as string, 1, "{}"), TypeError);
});

Deno.test("the key of a payload hashed before comes from a bounded memo, exact", async () => {
  const sha = (source: string, length: number, payload: string) =>
    createHash("sha256").update(
      `${JSON.stringify([source, length])}\n${payload}`,
    ).digest("hex");
  const payloads = Array.from({ length: 40 }, (_, i) => `{"messages":[${i}]}`);
  for (let round = 0; round < 2; round++) {
    for (const payload of payloads) {
      strictEqual(
        await countCacheKey("s", 8192, payload),
        sha("s", 8192, payload),
      );
    }
  }
  // The same text for another source or context length has its own key.
  const last = payloads.at(-1)!;
  strictEqual(await countCacheKey("t", 8192, last), sha("t", 8192, last));
  strictEqual(await countCacheKey("t", 4096, last), sha("t", 4096, last));
  strictEqual(await countCacheKey("s", 8192, last), sha("s", 8192, last));
  const kept = payloads.slice(-32);
  deepStrictEqual(countKeyMemoSize(), {
    entries: 32,
    chars: kept.reduce((sum, payload) => sum + payload.length, 0),
  });
  // A payload up to 32 Ki characters is kept; a longer one is not.
  const longest = "y".repeat(32_768);
  strictEqual(await countCacheKey("s", 8192, longest), sha("s", 8192, longest));
  const { entries, chars } = countKeyMemoSize();
  strictEqual(entries, 32);
  strictEqual(chars, kept.slice(1).reduce((sum, p) => sum + p.length, 32_768));
  const longer = `${longest}y`;
  strictEqual(await countCacheKey("s", 8192, longer), sha("s", 8192, longer));
  deepStrictEqual(countKeyMemoSize(), { entries, chars });
});
