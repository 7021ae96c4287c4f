// Covers: packages/engine/src/vllm/payload.ts, packages/engine/src/vllm/caps.ts
import { deepStrictEqual, ok, strictEqual, throws } from "node:assert/strict";
import type { JsonObject } from "../../../src/core/backend.ts";
import { EngineError } from "../../../packages/engine/src/common/errors.ts";
import { effectiveField } from "../../../src/core/request.ts";
import {
  laxInteger,
  laxPositiveInteger,
} from "../../../packages/engine/src/vllm/caps.ts";
import { vllmRules } from "../../../packages/engine/src/vllm/release.ts";
import {
  assertMirrorable,
  buildTokenizePayload,
  dependsOnRelease,
  isMultimodal,
  transferredPromptLength,
  truncationLimit,
} from "../../../packages/engine/src/vllm/payload.ts";

const json = (request: JsonObject): string =>
  JSON.stringify(buildTokenizePayload(request));

Deno.test("effectiveField() reads extra_body over the top level", async (t) => {
  await t.step("extra_body wins", () => {
    strictEqual(
      effectiveField({ model: "a", extra_body: { model: "b" } }, "model"),
      "b",
    );
    strictEqual(
      effectiveField({ model: "a", extra_body: { model: null } }, "model"),
      null,
    );
  });
  await t.step("absent or undefined in extra_body falls back", () => {
    strictEqual(effectiveField({ model: "a", extra_body: {} }, "model"), "a");
    strictEqual(
      effectiveField({ model: "a", extra_body: { model: undefined } }, "model"),
      "a",
    );
    strictEqual(effectiveField({ model: "a", extra_body: null }, "model"), "a");
    strictEqual(
      effectiveField({ model: "a", extra_body: ["model"] }, "model"),
      "a",
    );
  });
  await t.step("inherited properties are not fields", () => {
    strictEqual(effectiveField({}, "toString"), undefined);
    strictEqual(effectiveField({ extra_body: {} }, "constructor"), undefined);
  });
});

Deno.test("buildTokenizePayload() keeps the vLLM field order", async (t) => {
  await t.step(
    "add_generation_prompt defaults to true, other defaults stay absent",
    () => {
      strictEqual(
        json({ messages: [] }),
        '{"messages":[],"add_generation_prompt":true}',
      );
    },
  );

  await t.step("null values are sent as given", () => {
    strictEqual(
      json({ messages: [], tools: null, chat_template: null }),
      '{"messages":[],"tools":null,"add_generation_prompt":true,"chat_template":null}',
    );
  });

  await t.step("keys inside values keep their insertion order", () => {
    strictEqual(
      json({ messages: [{ z: 1, content: "c", role: "user", a: 2 }] }),
      '{"messages":[{"z":1,"content":"c","role":"user","a":2}],"add_generation_prompt":true}',
    );
  });

  await t.step("fields outside the tokenize body are left out", () => {
    const payload = buildTokenizePayload({
      messages: [],
      temperature: 1,
      max_tokens: 5,
      stream: true,
      tool_choice: "auto",
      truncate_prompt_tokens: 5,
      kv_transfer_params: {},
      documents: null,
      reasoning_effort: null,
      extra_body: { seed: 1 },
    });
    deepStrictEqual(Object.keys(payload), [
      "messages",
      "add_generation_prompt",
    ]);
  });
});

Deno.test("buildTokenizePayload() folds documents and reasoning_effort", async (t) => {
  await t.step("into a copy of chat_template_kwargs", () => {
    const kwargs = { a: 1 };
    const payload = buildTokenizePayload({
      messages: [],
      chat_template_kwargs: kwargs,
      documents: [1],
    });
    deepStrictEqual(payload.chat_template_kwargs, { a: 1, documents: [1] });
    deepStrictEqual(kwargs, { a: 1 });
  });

  await t.step("a null chat_template_kwargs becomes an object", () => {
    deepStrictEqual(
      buildTokenizePayload({
        messages: [],
        chat_template_kwargs: null,
        reasoning_effort: "low",
      })
        .chat_template_kwargs,
      { reasoning_effort: "low" },
    );
  });

  await t.step(
    'the top-level effort wins over the given one, adds nothing else, and "auto" counts as unset',
    () => {
      deepStrictEqual(
        buildTokenizePayload({
          messages: [],
          chat_template_kwargs: { reasoning_effort: "low" },
          reasoning_effort: "high",
        }).chat_template_kwargs,
        { reasoning_effort: "high" },
      );
      deepStrictEqual(
        buildTokenizePayload({
          messages: [],
          chat_template_kwargs: { reasoning_effort: "low" },
          reasoning_effort: "auto",
        }).chat_template_kwargs,
        { reasoning_effort: "low" },
      );
    },
  );

  await t.step("a malformed chat_template_kwargs is sent as given", () => {
    strictEqual(
      buildTokenizePayload({
        messages: [],
        chat_template_kwargs: "x",
        reasoning_effort: "low",
      })
        .chat_template_kwargs,
      "x",
    );
  });

  await t.step(
    "without documents or effort, chat_template_kwargs is passed through",
    () => {
      const kwargs = { a: 1 };
      strictEqual(
        buildTokenizePayload({ messages: [], chat_template_kwargs: kwargs })
          .chat_template_kwargs,
        kwargs,
      );
    },
  );

  await t.step(
    "a given null key is not overwritten, an undefined one is",
    () => {
      deepStrictEqual(
        buildTokenizePayload({
          messages: [],
          chat_template_kwargs: { enable_thinking: null, documents: undefined },
          documents: ["d"],
          reasoning_effort: "medium",
        }).chat_template_kwargs,
        { enable_thinking: null, documents: ["d"], reasoning_effort: "medium" },
      );
    },
  );
});

Deno.test("buildTokenizePayload() sends the request's own messages", async (t) => {
  await t.step(
    "the messages array is the request's, reasoning fields untouched",
    () => {
      const messages = [
        { role: "user", content: "q" },
        { role: "assistant", reasoning_content: "r", content: "a" },
        { role: "assistant", reasoning: null, reasoning_content: "s" },
        { role: "assistant", reasoning: "t", reasoning_content: "u" },
      ];
      const payload = buildTokenizePayload({ messages });
      strictEqual(payload.messages, messages);
      strictEqual(
        JSON.stringify(payload.messages),
        '[{"role":"user","content":"q"},' +
          '{"role":"assistant","reasoning_content":"r","content":"a"},' +
          '{"role":"assistant","reasoning":null,"reasoning_content":"s"},' +
          '{"role":"assistant","reasoning":"t","reasoning_content":"u"}]',
      );
    },
  );
});

Deno.test("buildTokenizePayload() folds reasoning_effort as the release does", async (t) => {
  const request = { messages: [], reasoning_effort: "low" };
  await t.step("from 0.15.0 the effort reaches the template", () => {
    deepStrictEqual(
      buildTokenizePayload(request, vllmRules("0.15.0")).chat_template_kwargs,
      { reasoning_effort: "low" },
    );
  });
  await t.step("before 0.15.0 the chat path drops it", () => {
    strictEqual(
      buildTokenizePayload(request, vllmRules("0.14.1")).chat_template_kwargs,
      undefined,
    );
  });
  await t.step(
    "dependsOnRelease() tells which requests need the release",
    () => {
      ok(dependsOnRelease(request));
      ok(
        dependsOnRelease({
          messages: [],
          extra_body: { reasoning_effort: "none" },
        }),
      );
      ok(!dependsOnRelease({ messages: [], reasoning_effort: null }));
      ok(!dependsOnRelease({ messages: [] }));
    },
  );
});

Deno.test("assertMirrorable() throws an EngineError for what /tokenize cannot mirror", () => {
  const tools = [{ type: "function" }];
  const fails = (request: JsonObject, message: string) =>
    throws(() => assertMirrorable(request), (error: unknown) => {
      ok(error instanceof EngineError);
      strictEqual(error.message, message);
      return true;
    });
  fails(
    { messages: [], tools, tool_choice: "required" },
    "vLLM /tokenize cannot mirror tool_choice",
  );
  fails(
    { messages: [], tools, tool_choice: {} },
    "vLLM /tokenize cannot mirror tool_choice",
  );
  fails(
    { messages: [], response_format: {} },
    "vLLM /tokenize cannot mirror response_format",
  );
  fails(
    { messages: [], response_format: "json" },
    "vLLM /tokenize cannot mirror response_format",
  );
  fails(
    { messages: "hi" },
    "Cannot count the request as 'messages' is not an array",
  );
  fails(
    { messages: [], extra_body: { messages: null } },
    "Cannot count the request as 'messages' is not an array",
  );
  assertMirrorable({ messages: [], tools, tool_choice: "auto" });
  assertMirrorable({
    messages: [],
    tools: "not a list",
    tool_choice: "required",
  });
  assertMirrorable({ messages: [], tool_choice: "required" });
  assertMirrorable({ messages: [], response_format: null });
  assertMirrorable({ extra_body: { messages: [] } });
});

Deno.test("transferredPromptLength() reads non-empty lists of token ids only", () => {
  strictEqual(
    transferredPromptLength({
      kv_transfer_params: { prompt_token_ids: [0, 1, 2] },
    }),
    3,
  );
  strictEqual(
    transferredPromptLength({
      kv_transfer_params: { prompt_token_ids: [1] },
      extra_body: { kv_transfer_params: { prompt_token_ids: [1, 2] } },
    }),
    2,
  );
  for (
    const ids of [
      [],
      [-1],
      [1.5],
      ["1"],
      [true],
      [Number.NaN],
      [2 ** 53],
      {},
      null,
    ]
  ) {
    strictEqual(
      transferredPromptLength({
        kv_transfer_params: { prompt_token_ids: ids },
      }),
      undefined,
    );
  }
  // A sparse list has holes where no token is.
  strictEqual(
    transferredPromptLength({
      kv_transfer_params: { prompt_token_ids: [1, , 2] },
    }),
    undefined,
  );
  strictEqual(
    transferredPromptLength({ kv_transfer_params: [1, 2] }),
    undefined,
  );
  strictEqual(transferredPromptLength({}), undefined);
});

Deno.test("truncationLimit() and isMultimodal() read truncation as vLLM does", async (t) => {
  await t.step("limits", () => {
    strictEqual(truncationLimit({ truncate_prompt_tokens: 7 }), 7);
    strictEqual(truncationLimit({ truncate_prompt_tokens: "7" }), 7);
    strictEqual(truncationLimit({ truncate_prompt_tokens: 0 }), 0);
    strictEqual(truncationLimit({ truncate_prompt_tokens: "-0" }), 0);
    strictEqual(truncationLimit({ truncate_prompt_tokens: -1 }), undefined);
    strictEqual(truncationLimit({ truncate_prompt_tokens: -2 }), undefined);
    strictEqual(truncationLimit({ truncate_prompt_tokens: 1.5 }), undefined);
    strictEqual(truncationLimit({}), undefined);
  });
  await t.step("multimodal prompts", () => {
    const withParts = (...parts: unknown[]) => ({
      messages: [{ role: "user", content: parts }],
    });
    strictEqual(
      isMultimodal({ messages: [{ role: "user", content: "text" }] }),
      false,
    );
    strictEqual(isMultimodal(withParts({ type: "text", text: "a" })), false);
    strictEqual(
      isMultimodal(
        withParts({ type: "text", text: "a" }, { type: "image_url" }),
      ),
      true,
    );
    strictEqual(isMultimodal(withParts({ type: "input_audio" })), true);
    strictEqual(isMultimodal(withParts("bare string")), true);
    strictEqual(
      isMultimodal({
        messages: [],
        extra_body: withParts({ type: "video_url" }),
      }),
      true,
    );
    strictEqual(isMultimodal({ messages: "x" }), false);
  });
});

Deno.test("laxInteger() reads integers as pydantic's lax int validator", () => {
  const table: [unknown, number | undefined][] = [
    [true, 1],
    [false, 0],
    [0, 0],
    [-0, 0],
    [-3, -3],
    [3.0, 3],
    [3.5, undefined],
    [Number.NaN, undefined],
    [Number.NEGATIVE_INFINITY, undefined],
    [Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER],
    [Number.MAX_SAFE_INTEGER + 1, undefined],
    ["42", 42],
    ["-42", -42],
    ["+42", 42],
    ["0042", 42],
    ["-0", 0],
    [" 42\t", 42],
    ["\u3000 42 \u2028", 42],
    ["\u008542", 42],
    ["\ufeff42", undefined],
    ["42.", 42],
    ["42.000", 42],
    ["+42.0", 42],
    ["42.01", undefined],
    [".0", undefined],
    ["4_2", 42],
    ["+4_2", 42],
    ["_42", undefined],
    ["42_", undefined],
    ["4__2", undefined],
    ["4_2.0", undefined],
    ["4._0", undefined],
    ["4 2", undefined],
    ["٤٢", undefined],
    ["1e2", undefined],
    ["0x2a", undefined],
    ["+-1", undefined],
    ["", undefined],
    ["0000000000000000042", 42],
    ["000000000000000004_2", 42],
    ["9007199254740993", undefined],
    ["1".repeat(4301), undefined],
    [null, undefined],
    [10n, undefined],
    [{}, undefined],
  ];
  for (const [value, expected] of table) {
    const got = laxInteger(value);
    strictEqual(got, expected, `laxInteger(${JSON.stringify(String(value))})`);
    if (got === 0) ok(Object.is(got, 0), "never negative zero");
  }
  strictEqual(laxPositiveInteger("0"), undefined);
  strictEqual(laxPositiveInteger(" 1 "), 1);
  strictEqual(laxPositiveInteger(-1), undefined);
});
