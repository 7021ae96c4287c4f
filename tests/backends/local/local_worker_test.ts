// Covers: src/backends/local/local_backend.ts, packages/engine/src/model/operations.ts
// LocalBackend counting inside the count cache's core: the worker, the
// in-process fallback and the calling thread (`cache: null`) give the same
// counts; one load per model folder per core; the caller's event loop runs
// while a model loads; a crash mid-count fails that count only; errors cross
// the port by name, without prompt text; piece counts live in the cache.
import {
  deepStrictEqual,
  match,
  ok,
  rejects,
  strictEqual,
} from "node:assert/strict";
import { dirname } from "node:path";
import { LocalBackend } from "../../../src/backends/local/mod.ts";
import { CountError, TemplateRejectedError } from "../../../src/core/errors.ts";
import { createCountCache } from "../../../src/cache/mod.ts";
import {
  createCountCacheForTesting,
  terminateCountWorkerForTesting,
} from "../../../src/testing/count_cache.ts";
import { MODEL_FILES, type ModelFiles } from "../../_kit/model_files.ts";
import { timerTicksDuring } from "../../_kit/timer_ticks.ts";
import { CONVERSATIONS } from "../../_kit/tokenizer_conversations.ts";

const C = { contextLength: 131072 };

function family(name: string): ModelFiles {
  return MODEL_FILES.find((files) => files.family === name)!;
}

function dirOf(name: string): string {
  return dirname(family(name).tokenizerPath);
}

/** The shared conversations as requests (tool-call arguments as JSON text), plus the other forms. */
const REQUESTS: Record<string, unknown>[] = [
  ...CONVERSATIONS.map((conversation) =>
    JSON.parse(
      JSON.stringify(conversation, (key, value) =>
        key === "arguments" && typeof value === "object"
          ? JSON.stringify(value)
          : value),
    )
  ),
  {
    messages: [{ role: "user", content: "Finish this: the quick brown" }],
    add_generation_prompt: false,
  },
  {
    messages: [
      { role: "user", content: "Say hi" },
      { role: "assistant", content: "Hi th" },
    ],
    add_generation_prompt: false,
    continue_final_message: true,
  },
];

/** Each count, or the name of its error. */
async function countAll(
  backend: LocalBackend,
  requests: readonly Record<string, unknown>[],
): Promise<(number | string)[]> {
  const counts: (number | string)[] = [];
  for (const request of requests) {
    counts.push(
      await backend.count(request, C).catch((error: Error) => error.name),
    );
  }
  counts.push(
    await backend.count({ prompt: "hello world 你好 🎉" }, {
      ...C,
      kind: "completion",
    }),
  );
  return counts;
}

Deno.test("LocalBackend counts the same in the worker, in the in-process core and on the calling thread", async (t) => {
  await using worker = createCountCache();
  await using inProcess = createCountCache({ inProcess: true });
  for (const model of MODEL_FILES) {
    await t.step(model.family, async () => {
      const dir = dirname(model.tokenizerPath);
      const counts = [];
      for (const cache of [worker, inProcess, null]) {
        await using backend = new LocalBackend({ dir, cache });
        counts.push(await countAll(backend, REQUESTS));
      }
      console.log(model.family, JSON.stringify(counts[0]));
      ok(counts[0]!.some((count) => typeof count === "number" && count > 0));
      deepStrictEqual(counts[1], counts[0], "in-process core vs worker");
      deepStrictEqual(counts[2], counts[0], "calling thread vs worker");
    });
  }
  strictEqual(worker.kind, "worker_threads");
  strictEqual((await worker.stats()).modelLoads, MODEL_FILES.length);
});

Deno.test("LocalBackend loads each model folder once per cache core", async () => {
  await using cache = createCountCache();
  const dir = dirOf("qwen3");
  await using first = new LocalBackend({ dir, cache });
  await using second = new LocalBackend({ dir, cache });
  const request = { messages: [{ role: "user", content: "hello" }] };
  const [a, b, files] = await Promise.all([
    first.count(request, C),
    second.count({ messages: [{ role: "user", content: "bye" }] }, C),
    second.load(),
  ]);
  ok(a > 0 && b > 0);
  match(files.tokenizer, /^[0-9a-f]{64}$/);
  match(files.template, /^[0-9a-f]{64}$/);
  match(files.tokenizerConfig ?? "", /^[0-9a-f]{64}$/);
  deepStrictEqual(await first.load(), files);
  strictEqual((await cache.stats()).modelLoads, 1);
  // Another template over the same files is another model.
  await using other = new LocalBackend({ dir, cache, chatTemplate: "{{ 1 }}" });
  await other.count(request, C);
  strictEqual((await cache.stats()).modelLoads, 2);
});

Deno.test("LocalBackend keeps the caller's event loop running while the worker loads", async () => {
  await using cache = createCountCache();
  await using backend = new LocalBackend({ dir: dirOf("gemma3"), cache });
  const heapBefore = Deno.memoryUsage().heapUsed;
  const { ticks, result: count } = await timerTicksDuring(() =>
    backend.count({ messages: [{ role: "user", content: "hello" }] }, C)
  );
  ok(count > 0);
  // The worker parses 33 MB of tokenizer.json and builds the tokenizer
  // while this thread keeps turning its timers...
  ok(ticks >= 3, `the timer chain ran ${ticks} times during the load`);
  // ...and none of it lands in this thread's heap (in process it grows by
  // about 280 MB, the parsed file and the tokenizer).
  const grown = Deno.memoryUsage().heapUsed - heapBefore;
  ok(grown < 50_000_000, `this thread's heap grew by ${grown} bytes`);
});

Deno.test("LocalBackend survives its worker terminated mid-count", async () => {
  await using cache = createCountCacheForTesting();
  await using backend = new LocalBackend({ dir: dirOf("gemma3"), cache });
  const request = { messages: [{ role: "user", content: "hello" }] };
  const pending = backend.count(request, C);
  // Wait until the worker has the count (and is loading the model).
  while ((await cache.stats()).modelLoads === 0) {
    await new Promise((wake) => setTimeout(wake, 5));
  }
  await terminateCountWorkerForTesting(cache);
  await rejects(pending, CountError);
  // A fresh worker loads the model again and counts.
  ok(await backend.count(request, C) > 0);
  strictEqual((await cache.stats()).modelLoads, 1);
  strictEqual(cache.kind, "worker_threads");
});

Deno.test("LocalBackend's errors cross the port by name, without prompt text", async (t) => {
  const secret = `secret-prompt-${crypto.randomUUID()}`;
  await using cache = createCountCache();
  const caches = [
    ["worker", cache],
    ["in-process core", createCountCache({ inProcess: true })],
    ["calling thread", null],
  ] as const;
  const noSecret = (error: unknown): boolean => {
    for (let e = error; e instanceof Error; e = e.cause) {
      if (`${e.name} ${e.message} ${e.stack}`.includes(secret)) return false;
    }
    return true;
  };
  for (const [name, chosen] of caches) {
    await t.step(name, async () => {
      await using backend = new LocalBackend({
        dir: dirOf("gemma3"),
        cache: chosen,
      });
      // Gemma 3's template raises on roles that do not alternate.
      const rejected = {
        messages: [
          { role: "user", content: secret },
          { role: "user", content: secret },
        ],
      };
      await rejects(backend.count(rejected, C), (error: unknown) => {
        ok(error instanceof TemplateRejectedError, String(error));
        ok(noSecret(error));
        return true;
      });
      // Templates whose own errors quote the prompt: a raise, and a failure.
      for (
        const [template, expected] of [
          [
            "{{ raise_exception(messages[0]['content']) }}",
            TemplateRejectedError,
          ],
          [
            "{{ messages[0]['content'] | no_such_filter }}",
            CountError,
          ],
        ] as const
      ) {
        await using quoting = new LocalBackend({
          dir: dirOf("qwen3"),
          cache: chosen,
          chatTemplate: template,
        });
        await rejects(
          quoting.count({ messages: [{ role: "user", content: secret }] }, C),
          (error: unknown) => {
            ok(error instanceof expected, String(error));
            ok(noSecret(error));
            return true;
          },
        );
      }
      // A value no port can carry (the calling thread needs no port).
      if (chosen === null) return;
      const unsendable = {
        messages: [{ role: "user", content: secret, extra: () => secret }],
      };
      await rejects(backend.count(unsendable as never, C), (error: unknown) => {
        ok(error instanceof CountError, String(error));
        ok(noSecret(error));
        return true;
      });
    });
    if (chosen !== null) await chosen[Symbol.asyncDispose]();
  }
});

Deno.test("LocalBackend.load() rejects a tokenizer.json of another SHA-256 wherever it loads", async (t) => {
  const wrong = "0".repeat(64);
  for (
    const [name, make] of [
      ["worker", () => createCountCache()],
      ["calling thread", () => null],
    ] as const
  ) {
    await t.step(name, async () => {
      const cache = make();
      const backend = new LocalBackend({
        dir: dirOf("qwen3"),
        expectedSha256: wrong,
        cache,
      });
      await rejects(backend.load(), (error: unknown) => {
        ok(error instanceof CountError);
        match(error.message, /does not match the expected SHA-256/);
        return true;
      });
      await rejects(
        backend.count({ messages: [{ role: "user", content: "x" }] }, C),
        CountError,
      );
      await cache?.[Symbol.asyncDispose]();
    });
  }
});

Deno.test("LocalBackend keeps piece counts in the shared cache's LRU", async () => {
  await using cache = createCountCache({ maxEntries: 64 });
  await using backend = new LocalBackend({ dir: dirOf("qwen3"), cache });
  const question = { role: "user", content: "What is the capital of France?" };
  await backend.count({
    messages: [{ role: "system", content: "Be brief." }, question],
  }, C);
  const first = await cache.stats();
  ok(first.segmentMisses > 0);
  // One whole count plus its pieces.
  ok(first.entries > 1, JSON.stringify(first));
  // Another conversation with the same question: its piece is a hit.
  await backend.count({
    messages: [{ role: "system", content: "Be thorough." }, question],
  }, C);
  const second = await cache.stats();
  ok(second.segmentHits > first.segmentHits, JSON.stringify(second));
  // The LRU's bound holds pieces too.
  for (let i = 0; i < 40; i++) {
    await backend.count({
      messages: [{ role: "user", content: `question ${i}` }],
    }, C);
  }
  ok((await cache.stats()).entries <= 64);
  // A worker that cannot start: the in-process core counts the same way.
  await using fallback = createCountCacheForTesting({
    workerUrl: new URL("data:text/javascript,"),
  });
  await using other = new LocalBackend({
    dir: dirOf("qwen3"),
    cache: fallback,
  });
  strictEqual(
    await other.count({ messages: [question] }, C),
    await backend.count({ messages: [question] }, C),
  );
  strictEqual(fallback.kind, "in-process");
  ok((await fallback.stats()).segmentMisses > 0);
});

Deno.test("loadTokenizer()'s speed-ups change no ids and no counts", async (t) => {
  const { Tokenizer } = await import("@huggingface/tokenizers");
  const { loadTokenizer } = await import(
    "../../../packages/engine/src/tokenizer/tokenizer.ts"
  );
  const { PLAIN_TEXTS, textsWithTokens } = await import(
    "../../_kit/tokenizer_corpus.ts"
  );
  const { ProseGenerator } = await import(
    "../../../bench/_local_bench_text.ts"
  );
  for (const name of ["qwen3", "llama3"]) {
    await t.step(name, async () => {
      const model = family(name);
      const tokenizerJson = await Deno.readTextFile(model.tokenizerPath);
      const fast = loadTokenizer({
        tokenizerJson,
        tokenizerConfig: JSON.stringify(model.config),
      });
      // The library as shipped, without the speed-ups.
      const stock = new Tokenizer(JSON.parse(tokenizerJson), model.config);
      const prose = new ProseGenerator(42);
      // Fresh words past the word cache's 10,000 entries, and repeats.
      // Words either side of the length where merging by scan hands over
      // to the library's queue (48 code points), repeated symbols, long runs.
      const letters = "etaoinshrdlucmfwyp";
      const longWords = Array.from({ length: 60 }, (_, i) => {
        let word = "";
        for (let j = 0; j < 20 + i; j++) {
          word += letters[(i * 7 + j * j) % letters.length];
        }
        return ` ${word} ${"ab".repeat(i)} ${"x".repeat(i)}`;
      });
      const texts = [
        ...PLAIN_TEXTS,
        ...textsWithTokens(fast.addedTokens.slice(0, 8)),
        ...Array.from({ length: 8 }, () => prose.text(40_000)),
        ...longWords,
        "=".repeat(300) + " ".repeat(70) + "\u00e9".repeat(60),
        ...PLAIN_TEXTS,
      ];
      for (const text of texts) {
        deepStrictEqual(
          fast.encode(text, { addSpecialTokens: false }),
          stock.encode(text, { add_special_tokens: false }).ids,
        );
        // count() skips the ids: the same length, special tokens or not.
        for (const addSpecialTokens of [false, true]) {
          strictEqual(
            fast.count(text, { addSpecialTokens }),
            stock.encode(text, { add_special_tokens: addSpecialTokens }).ids
              .length,
          );
        }
      }
    });
  }
});

Deno.test("LocalBackend with a clock counts on the calling thread, caching whole counts", async () => {
  await using cache = createCountCache({ inProcess: true });
  // Llama 3.1-style templates read the date; a clock cannot cross a port.
  const template =
    "{{ strftime_now('%d %b %Y') }}|{{ messages[0]['content'] }}";
  await using backend = new LocalBackend({
    dir: dirOf("qwen3"),
    cache,
    chatTemplate: template,
    now: () => new Date("2026-03-07T15:04:05"),
  });
  const request = { messages: [{ role: "user", content: "hi" }] };
  const count = await backend.count(request, C);
  ok(count > 0);
  strictEqual(await backend.count(request, C), count);
  const stats = await cache.stats();
  strictEqual(stats.modelLoads, 0);
  strictEqual(stats.entries, 1);
  strictEqual(stats.hits, 1);
});
