// Covers: packages/engine/src/vllm/template_kwargs.ts, packages/engine/src/model/chat_render.ts, src/backends/local/local_backend.ts
import {
  deepStrictEqual,
  rejects,
  strictEqual,
  throws,
} from "node:assert/strict";
import { fileURLToPath } from "node:url";
import {
  mergeKwargs,
  withDefaultKwargs,
} from "../../../packages/engine/src/vllm/template_kwargs.ts";
import { LocalBackend } from "../../../src/backends/local/mod.ts";
import { TemplateRejectedError } from "../../../src/core/errors.ts";

/** One token per byte: a render comes back from tokenize + detokenize as it was. */
const DIR = fileURLToPath(
  new URL("../../fixtures/byte_level/", import.meta.url),
);
/** Qwen3's switch: an empty think block when thinking is off. */
const QWEN3_LIKE = "{{ messages[0].content }}" +
  "{% if enable_thinking is defined and enable_thinking is false %}" +
  "<think>\n\n</think>\n\n{% endif %}" +
  "|{{ documents | tojson }}|{{ effort is defined }}";

async function rendered(
  request: Record<string, unknown>,
  defaults?: Record<string, unknown>,
): Promise<string> {
  await using backend = new LocalBackend({
    dir: DIR,
    chatTemplate: QWEN3_LIKE,
    cache: null,
    ...(defaults === undefined ? {} : { defaultChatTemplateKwargs: defaults }),
  });
  const ids = await backend.tokenize({
    messages: [{ role: "user", content: "Hi" }],
    add_generation_prompt: false,
    ...request,
  });
  return await backend.detokenize(ids);
}

Deno.test("mergeKwargs() is Python's defaults | overrides without None and 'auto'", () => {
  deepStrictEqual(
    mergeKwargs(
      { enable_thinking: false, a: 1, b: 2 },
      { enable_thinking: null, a: "auto", b: 0, c: false, d: "" },
    ),
    { enable_thinking: false, a: 1, b: 0, c: false, d: "" },
  );
  const defaults = { a: 1 };
  mergeKwargs(defaults, { a: 2 });
  deepStrictEqual(defaults, { a: 1 });
});

Deno.test("withDefaultKwargs() merges the body's kwargs and leaves a malformed one to the preprocessing", () => {
  const body = { messages: [], chat_template_kwargs: { x: null, y: 1 } };
  deepStrictEqual(withDefaultKwargs(body, { x: 0 }).chat_template_kwargs, {
    x: 0,
    y: 1,
  });
  // vLLM merges on every request: a None value is dropped without defaults.
  deepStrictEqual(withDefaultKwargs(body).chat_template_kwargs, { y: 1 });
  deepStrictEqual(withDefaultKwargs({ messages: [] }, { x: 0 }), {
    messages: [],
    chat_template_kwargs: { x: 0 },
  });
  const malformed = { messages: [], chat_template_kwargs: [1] };
  strictEqual(withDefaultKwargs(malformed, { x: 0 }), malformed);
});

Deno.test("LocalBackend's defaultChatTemplateKwargs reach the template under the request's own", async (t) => {
  const off = { enable_thinking: false };
  await t.step("a default turns Qwen3's thinking off", async () => {
    strictEqual(await rendered({}), "Hi|null|False");
    strictEqual(
      await rendered({}, off),
      "Hi<think>\n\n</think>\n\n|null|False",
    );
  });
  await t.step(
    "the request's value wins; its null or 'auto' does not",
    async () => {
      const own = (value: unknown) =>
        rendered({ chat_template_kwargs: { enable_thinking: value } }, off);
      strictEqual(await own(true), "Hi|null|False");
      strictEqual(await own(null), "Hi<think>\n\n</think>\n\n|null|False");
      strictEqual(await own("auto"), "Hi<think>\n\n</think>\n\n|null|False");
    },
  );
  await t.step(
    "documents and other variables come from the defaults too",
    async () => {
      strictEqual(
        await rendered({}, { documents: [{ text: "d" }], effort: "high" }),
        'Hi|[{"text": "d"}]|True',
      );
      // A request's documents win over the default.
      strictEqual(
        await rendered({
          chat_template_kwargs: { documents: [{ text: "own" }] },
        }, {
          documents: [{ text: "d" }],
        }),
        'Hi|[{"text": "own"}]|False',
      );
    },
  );
  await t.step("a request's own null is dropped as vLLM drops it", async () => {
    const template = "{{ x is defined }}";
    await using backend = new LocalBackend({
      dir: DIR,
      chatTemplate: template,
      cache: null,
    });
    const ids = await backend.tokenize({
      messages: [{ role: "user", content: "Hi" }],
      chat_template_kwargs: { x: null },
    });
    strictEqual(await backend.detokenize(ids), "False");
  });
  await t.step("defaults that are not an object fail at construction", () => {
    throws(
      () =>
        new LocalBackend({
          dir: DIR,
          defaultChatTemplateKwargs: [] as unknown as Record<string, unknown>,
        }),
      TypeError,
    );
  });
});

Deno.test("LocalBackend counts with other defaults apart in the count cache's worker", async () => {
  const { createCountCache } = await import("../../../src/cache/mod.ts");
  await using cache = createCountCache();
  const count = async (defaults?: Record<string, unknown>) => {
    await using backend = new LocalBackend({
      dir: DIR,
      chatTemplate: QWEN3_LIKE,
      cache,
      ...(defaults === undefined
        ? {}
        : { defaultChatTemplateKwargs: defaults }),
    });
    return await backend.count({
      messages: [{ role: "user", content: "Hi" }],
    }, { contextLength: 8192 });
  };
  const plain = await count();
  strictEqual(await count({ enable_thinking: false }), plain + 19);
  strictEqual(await count(), plain);
});

Deno.test("LocalBackend refuses continue_final_message without text to continue, as transformers does", async () => {
  await using backend = new LocalBackend({
    dir: DIR,
    chatTemplate:
      "{% for m in messages %}{% for p in m.content %}{{ p.text }}{% endfor %}{% endfor %}",
    cache: null,
  });
  for (const content of [[], null]) {
    await rejects(
      backend.count({
        messages: [{ role: "user", content: "Hi" }, {
          role: "assistant",
          content,
        }],
        add_generation_prompt: false,
        continue_final_message: true,
      }, { contextLength: 8192 }),
      TemplateRejectedError,
    );
  }
});
