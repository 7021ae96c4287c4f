// Covers: src/backends/local/local_backend.ts, packages/engine/src/model/operations.ts
/**
 * The tokenize server's work (`LocalBackend.tokenize`, `detokenize`,
 * `tokenStrings`) runs where counts run: in the count cache's worker, with
 * the same answers as on the calling thread, over real model files.
 */
import { dirname } from "node:path";
import { deepStrictEqual, ok, rejects, strictEqual } from "node:assert/strict";
import { createCountCache } from "../../../src/cache/mod.ts";
import { LocalBackend } from "../../../src/backends/local/mod.ts";
import { CountError, TemplateRejectedError } from "../../../src/core/errors.ts";
import { MODEL_FILES } from "../../_kit/model_files.ts";
import { timerTicksDuring } from "../../_kit/timer_ticks.ts";
import { CONVERSATIONS } from "../../_kit/tokenizer_conversations.ts";

const folder = (family: string): string =>
  dirname(MODEL_FILES.find((model) => model.family === family)!.tokenizerPath);
const QWEN3 = folder("qwen3");

const BODIES: readonly [string, Record<string, unknown>][] = [
  ["text form, special tokens added", { prompt: "Hello there, 世界 🙂" }],
  ["text form without special tokens", {
    prompt: "line one\r\n  line two\n\n\tend",
    add_special_tokens: false,
  }],
  ["chat form continuing the final message", {
    messages: [
      { role: "user", content: "Count to three." },
      { role: "assistant", content: "One, two," },
    ],
    add_generation_prompt: false,
    continue_final_message: true,
  }],
  ["chat form with the body's own template", {
    messages: [{ role: "user", content: "hi" }],
    chat_template:
      "{% for m in messages %}[{{ m.role }}] {{ m.content }}\n{% endfor %}",
  }],
];

Deno.test("LocalBackend tokenizes and decodes in the count worker exactly as on the calling thread", async (t) => {
  await using cache = createCountCache();
  await using inWorker = new LocalBackend({ dir: QWEN3, cache });
  await using here = new LocalBackend({ dir: QWEN3, cache: null });
  await t.step("the worker loads the model for a tokenization", async () => {
    await inWorker.tokenize({ prompt: "hi" });
    strictEqual((await cache.stats()).modelLoads, 1);
  });
  const conversations = CONVERSATIONS.map((body, i): [string, typeof body] => [
    `corpus conversation ${i + 1} (chat form)`,
    body,
  ]);
  for (const [name, body] of [...BODIES, ...conversations]) {
    await t.step(name, async () => {
      const ids = await inWorker.tokenize(body);
      deepStrictEqual(ids, await here.tokenize(body));
      ok(ids.length > 0);
      strictEqual(await inWorker.detokenize(ids), await here.detokenize(ids));
      deepStrictEqual(
        await inWorker.tokenStrings(ids),
        await here.tokenStrings(ids),
      );
    });
  }
  await t.step(
    "counts, tokenization and decoding share one model load",
    async () => {
      await inWorker.count({ messages: [{ role: "user", content: "hi" }] }, {
        contextLength: 8192,
      });
      strictEqual((await cache.stats()).modelLoads, 1);
    },
  );
  await t.step("the text round-trips through the worker", async () => {
    const ids = await inWorker.tokenize({
      prompt: "Round trip: ÿ ☃ 𝄞",
      add_special_tokens: false,
    });
    strictEqual(await inWorker.detokenize(ids), "Round trip: ÿ ☃ 𝄞");
  });
});

Deno.test("LocalBackend's tokenize errors keep their class across the worker", async (t) => {
  await using cache = createCountCache();
  await using backend = new LocalBackend({ dir: QWEN3, cache });
  await t.step("a template that raises: TemplateRejectedError", async () => {
    await rejects(
      backend.tokenize({
        messages: [{ role: "user", content: "hi" }],
        chat_template: "{{ raise_exception('roles must alternate') }}",
      }),
      TemplateRejectedError,
    );
  });
  await t.step("a body with neither form: CountError", async () => {
    await rejects(backend.tokenize({ input: "x" }), CountError);
  });
  await t.step(
    "ids outside the vocabulary: CountError from the worker",
    async () => {
      await rejects(
        backend.detokenize([1, 10_000_000]),
        (error: unknown) =>
          error instanceof CountError &&
          /token ids in the vocabulary/.test(error.message),
      );
      await rejects(backend.tokenStrings([-1]), CountError);
    },
  );
  await t.step(
    "not an array of integers: CountError before any load",
    async () => {
      await using fresh = createCountCache();
      await using unloaded = new LocalBackend({ dir: QWEN3, cache: fresh });
      await rejects(
        unloaded.detokenize(["1"] as unknown as number[]),
        CountError,
      );
      await rejects(
        unloaded.tokenize("text" as unknown as Record<string, unknown>),
        CountError,
      );
      strictEqual((await fresh.stats()).modelLoads, 0);
    },
  );
  await t.step("a disposed backend fails", async () => {
    const disposed = new LocalBackend({ dir: QWEN3, cache });
    await disposed[Symbol.asyncDispose]();
    await rejects(disposed.tokenize({ prompt: "hi" }), CountError);
    await rejects(disposed.detokenize([1]), CountError);
  });
});

Deno.test("the calling thread's event loop turns while the worker loads a model to tokenize", async () => {
  await using cache = createCountCache();
  await using gemma = new LocalBackend({ dir: folder("gemma3"), cache });
  const { ticks, result } = await timerTicksDuring(() =>
    gemma.tokenize({ prompt: "hi", add_special_tokens: false })
  );
  ok(result.length > 0);
  ok(ticks >= 3, `the timer chain ran ${ticks} times during the load`);
});
