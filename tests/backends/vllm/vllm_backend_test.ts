import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import type { JsonObject } from "../../../src/core/backend.ts";
import { createCountCache } from "../../../src/cache/mod.ts";
import {
  createFakeVllmTokenizerHandler,
  type FakeVllmFault,
  type FakeVllmTokenizer,
  serveFakeVllmTokenizer,
} from "../../../src/testing/fake_vllm_server.ts";
import {
  VllmBackend,
  type VllmBackendOptions,
} from "../../../src/backends/vllm/mod.ts";
import * as kit from "../../_kit/backend_kit.ts";
import { captureLogs } from "../../_kit/log_capture.ts";

const CONTEXT = 8192;
const OPTIONS = { contextLength: CONTEXT };
const HELLO: JsonObject = { messages: [{ role: "user", content: "Hello" }] };

function serve(
  countTokens?: (body: JsonObject) => number,
): Promise<FakeVllmTokenizer> {
  return serveFakeVllmTokenizer({
    maxModelLen: CONTEXT,
    ...(countTokens === undefined ? {} : { countTokens }),
  });
}

function backendFor(
  server: FakeVllmTokenizer,
  options: Partial<VllmBackendOptions> = {},
): VllmBackend {
  return new VllmBackend({ url: server.url, cache: null, ...options });
}

/** The bytes the backend posted to `/tokenize` for `request`. */
async function posted(request: JsonObject): Promise<string> {
  await using server = await serve();
  await backendFor(server).count(request, OPTIONS);
  const counts = server.requests.filter((r) => r.path === "/tokenize");
  strictEqual(counts.length, 1);
  return counts[0]!.text;
}

Deno.test("VllmBackend.count() posts the tokenize payload byte for byte", async (t) => {
  await t.step("a minimal request gains add_generation_prompt", async () => {
    strictEqual(
      await posted(HELLO),
      '{"messages":[{"role":"user","content":"Hello"}],"add_generation_prompt":true}',
    );
  });

  await t.step(
    "fields go in the fixed order; other fields stay behind",
    async () => {
      const request = {
        mm_processor_kwargs: { fps: 1 },
        stream: true,
        media_io_kwargs: { video: { num_frames: 8 } },
        chat_template_kwargs: { z: 1, a: 2 },
        chat_template: "{{ messages }}",
        add_special_tokens: false,
        continue_final_message: false,
        add_generation_prompt: false,
        tools: [{
          type: "function",
          function: { name: "f", parameters: { z: {}, a: {} } },
        }],
        tool_choice: "auto",
        temperature: 0.2,
        max_tokens: 100,
        messages: [{ content: "Hi", role: "user" }],
        model: "qwen3",
      };
      strictEqual(
        await posted(request),
        '{"model":"qwen3","messages":[{"content":"Hi","role":"user"}],' +
          '"tools":[{"type":"function","function":{"name":"f","parameters":{"z":{},"a":{}}}}],' +
          '"add_generation_prompt":false,"continue_final_message":false,"add_special_tokens":false,' +
          '"chat_template":"{{ messages }}","chat_template_kwargs":{"z":1,"a":2},' +
          '"media_io_kwargs":{"video":{"num_frames":8}},"mm_processor_kwargs":{"fps":1}}',
      );
    },
  );

  await t.step("an empty tools list is kept", async () => {
    strictEqual(
      await posted({ model: "m", messages: [], tools: [] }),
      '{"model":"m","messages":[],"tools":[],"add_generation_prompt":true}',
    );
  });

  await t.step(
    "extra_body wins over the top level, also for model, messages and tools",
    async () => {
      const request = {
        model: "top",
        messages: [{ role: "user", content: "top" }],
        tools: [{ type: "function", function: { name: "top" } }],
        add_generation_prompt: true,
        chat_template_kwargs: { from: "top" },
        extra_body: {
          model: "nested",
          messages: [{ role: "user", content: "nested" }],
          tools: [],
          add_generation_prompt: false,
          chat_template_kwargs: { from: "nested" },
          mm_processor_kwargs: { fps: 2 },
        },
      };
      strictEqual(
        await posted(request),
        '{"model":"nested","messages":[{"role":"user","content":"nested"}],"tools":[],' +
          '"add_generation_prompt":false,"chat_template_kwargs":{"from":"nested"},"mm_processor_kwargs":{"fps":2}}',
      );
    },
  );

  await t.step(
    "documents and reasoning_effort fold into chat_template_kwargs",
    async () => {
      strictEqual(
        await posted({
          messages: [],
          documents: [{ title: "d" }],
          reasoning_effort: "high",
          chat_template_kwargs: { custom: 1 },
        }),
        '{"messages":[],"add_generation_prompt":true,"chat_template_kwargs":' +
          '{"custom":1,"documents":[{"title":"d"}],"reasoning_effort":"high"}}',
      );
      strictEqual(
        await posted({ messages: [], reasoning_effort: "none" }),
        '{"messages":[],"add_generation_prompt":true,"chat_template_kwargs":' +
          '{"reasoning_effort":"none"}}',
      );
    },
  );

  await t.step(
    "a given documents key wins over the folded one; the top-level reasoning_effort wins, as vLLM's merge_kwargs",
    async () => {
      strictEqual(
        await posted({
          messages: [],
          documents: ["top"],
          reasoning_effort: "none",
          chat_template_kwargs: {
            enable_thinking: true,
            documents: ["given"],
            reasoning_effort: "low",
          },
        }),
        '{"messages":[],"add_generation_prompt":true,"chat_template_kwargs":' +
          '{"enable_thinking":true,"documents":["given"],"reasoning_effort":"none"}}',
      );
    },
  );

  await t.step("extra_body's reasoning_effort and documents win", async () => {
    strictEqual(
      await posted({
        messages: [],
        reasoning_effort: "high",
        extra_body: { reasoning_effort: "none", documents: [] },
      }),
      '{"messages":[],"add_generation_prompt":true,"chat_template_kwargs":' +
        '{"documents":[],"reasoning_effort":"none"}}',
    );
  });

  await t.step(
    "messages go as the request holds them, reasoning_content included",
    async () => {
      const request = {
        messages: [
          { role: "user", content: "q" },
          { role: "assistant", reasoning_content: "think", content: "a" },
          {
            role: "assistant",
            reasoning: "kept",
            reasoning_content: "sent",
            content: "b",
          },
          { role: "assistant", reasoning: "", content: "c" },
        ],
      };
      strictEqual(
        await posted(request),
        '{"messages":[{"role":"user","content":"q"},' +
          '{"role":"assistant","reasoning_content":"think","content":"a"},' +
          '{"role":"assistant","reasoning":"kept","reasoning_content":"sent","content":"b"},' +
          '{"role":"assistant","reasoning":"","content":"c"}],"add_generation_prompt":true}',
      );
    },
  );

  await t.step("the count is the server's", async () => {
    await using server = await serve(() => 1234);
    strictEqual(await backendFor(server).count(HELLO, OPTIONS), 1234);
  });
});

// What any HTTP backend does on a bad answer is tested in
// tests/backends/http_conformance_test.ts; these are vLLM's own answers.
const FAULT_MESSAGES: readonly [FakeVllmFault, string][] = [
  ["invalid-count", "vLLM /tokenize returned an invalid count"],
  ["missing-count", "vLLM /tokenize returned an invalid count"],
  ["negative-count", "vLLM /tokenize returned an invalid count"],
  ["fractional-count", "vLLM /tokenize returned an invalid count"],
  ["invalid-max-model-len", "vLLM /tokenize returned an invalid max_model_len"],
  [
    "wrong-max-model-len",
    "vLLM max_model_len does not match the configured context length: 16384 != 8192",
  ],
];

Deno.test("VllmBackend.count() fails with a CountError on an answer vLLM would not give", async (t) => {
  for (const [fault, message] of FAULT_MESSAGES) {
    await t.step(fault, async () => {
      await using server = await serve();
      server.fault = fault;
      const error = await kit.countError(
        backendFor(server).count(HELLO, OPTIONS),
      );
      strictEqual(error.message, message);
      strictEqual(error.cause, undefined);
    });
  }

  await t.step(
    "a max_model_len that differs from the context length",
    async () => {
      await using server = await serve();
      const error = await kit.countError(
        backendFor(server).count(HELLO, { contextLength: 4096 }),
      );
      strictEqual(
        error.message,
        "vLLM max_model_len does not match the configured context length: 8192 != 4096",
      );
    },
  );
});

Deno.test("VllmBackend.count() fails requests /tokenize cannot mirror before any HTTP call", async (t) => {
  await using server = await serve();
  const backend = backendFor(server);
  const tools = [{ type: "function", function: { name: "f" } }];
  const refused: [string, JsonObject, string][] = [
    [
      "tool_choice required",
      { messages: [], tools, tool_choice: "required" },
      "tool_choice",
    ],
    [
      "tool_choice none",
      { messages: [], tools, tool_choice: "none" },
      "tool_choice",
    ],
    [
      "a named tool_choice",
      {
        messages: [],
        tools,
        tool_choice: { type: "function", function: { name: "f" } },
      },
      "tool_choice",
    ],
    [
      "tool_choice and tools in extra_body",
      { messages: [], extra_body: { tools, tool_choice: "required" } },
      "tool_choice",
    ],
    ["a response_format", {
      messages: [],
      response_format: { type: "json_object" },
    }, "response_format"],
    [
      "a response_format in extra_body",
      { messages: [], extra_body: { response_format: { type: "text" } } },
      "response_format",
    ],
  ];
  for (const [name, request, field] of refused) {
    await t.step(name, async () => {
      const error = await kit.countError(backend.count(request, OPTIONS));
      strictEqual(error.message, `vLLM /tokenize cannot mirror ${field}`);
      strictEqual(server.requests.length, 0);
    });
  }

  await t.step("a request without a messages array", async () => {
    const error = await kit.countError(
      backend.count({ prompt: "Hi" }, OPTIONS),
    );
    strictEqual(
      error.message,
      "Cannot count the request as 'messages' is not an array",
    );
    strictEqual(server.requests.length, 0);
  });

  const allowed: [string, JsonObject][] = [
    ["tool_choice auto", { messages: [], tools, tool_choice: "auto" }],
    ["tool_choice null", { messages: [], tools, tool_choice: null }],
    ["tool_choice without tools", {
      messages: [],
      tools: [],
      tool_choice: "required",
    }],
    ["extra_body empties the tools", {
      messages: [],
      tools,
      tool_choice: "required",
      extra_body: { tools: [] },
    }],
    ["extra_body resets tool_choice", {
      messages: [],
      tools,
      tool_choice: "required",
      extra_body: { tool_choice: "auto" },
    }],
    ["a null response_format", { messages: [], response_format: null }],
  ];
  for (const [name, request] of allowed) {
    await t.step(`${name} is counted`, async () => {
      server.requests.length = 0;
      await backend.count(request, OPTIONS);
      strictEqual(server.requests.length, 1);
    });
  }
});

Deno.test("VllmBackend.count() counts kv_transfer_params.prompt_token_ids without HTTP", async (t) => {
  await using server = await serve(() => 99);
  const backend = backendFor(server);

  await t.step("a valid token list is the prompt", async () => {
    const request = {
      ...HELLO,
      kv_transfer_params: { prompt_token_ids: [1, 2, 0, 7] },
    };
    strictEqual(await backend.count(request, OPTIONS), 4);
    strictEqual(
      await backend.count({
        ...HELLO,
        extra_body: { kv_transfer_params: { prompt_token_ids: [5] } },
      }, OPTIONS),
      1,
    );
    // The token list wins even where the template could not be mirrored.
    strictEqual(
      await backend.count({
        messages: [],
        response_format: { type: "json_object" },
        kv_transfer_params: { prompt_token_ids: [1] },
      }, OPTIONS),
      1,
    );
    strictEqual(server.requests.length, 0);
  });

  await t.step("anything else is ignored", async () => {
    const invalid = [[], [1, -1], [1, 2.5], ["1"], [1, null], "1,2", null];
    for (const ids of invalid) {
      strictEqual(
        await backend.count({
          ...HELLO,
          kv_transfer_params: { prompt_token_ids: ids },
        }, OPTIONS),
        99,
      );
    }
    strictEqual(
      await backend.count({ ...HELLO, kv_transfer_params: null }, OPTIONS),
      99,
    );
    strictEqual(server.requests.length, invalid.length + 1);
  });
});

Deno.test("VllmBackend.count() caps the count at truncate_prompt_tokens for text prompts", async (t) => {
  await using server = await serve(() => 50);
  const backend = backendFor(server);
  const cases: [string, unknown, number][] = [
    ["below the count", 10, 10],
    ["above the count", 100, 50],
    ["zero", 0, 0],
    ["-1 means no limit", -1, 50],
    ["null means no limit", null, 50],
    ["a lax integer string", " 10 ", 10],
    ["a fraction is not an integer", 10.5, 50],
  ];
  for (const [name, limit, expected] of cases) {
    await t.step(name, async () => {
      strictEqual(
        await backend.count(
          { ...HELLO, truncate_prompt_tokens: limit },
          OPTIONS,
        ),
        expected,
      );
    });
  }

  await t.step("extra_body's truncate_prompt_tokens wins", async () => {
    const request = {
      ...HELLO,
      truncate_prompt_tokens: -1,
      extra_body: { truncate_prompt_tokens: 20 },
    };
    strictEqual(await backend.count(request, OPTIONS), 20);
  });

  await t.step("multimodal prompts are not capped", async () => {
    const request = {
      messages: [{
        role: "user",
        content: [{ type: "text", text: "Describe" }, {
          type: "image_url",
          image_url: { url: "data:," },
        }],
      }],
      truncate_prompt_tokens: 10,
    };
    strictEqual(await backend.count(request, OPTIONS), 50);
    const textParts = {
      messages: [{ role: "user", content: [{ type: "text", text: "Hi" }] }],
      truncate_prompt_tokens: 10,
    };
    strictEqual(await backend.count(textParts, OPTIONS), 10);
  });
});

Deno.test("VllmBackend.outputBudgetLimit() is the context length minus truncate_prompt_tokens", () => {
  const backend = new VllmBackend({ url: "http://127.0.0.1:8000/tokenize" });
  const limit = (request: JsonObject) =>
    backend.outputBudgetLimit(request, OPTIONS);
  strictEqual(limit({ truncate_prompt_tokens: 1000 }), 7192);
  strictEqual(limit({ truncate_prompt_tokens: 0 }), 8192);
  strictEqual(limit({ truncate_prompt_tokens: "1000" }), 7192);
  strictEqual(limit({ extra_body: { truncate_prompt_tokens: 192 } }), 8000);
  strictEqual(limit({ truncate_prompt_tokens: 9000 }), 0);
  strictEqual(limit({ truncate_prompt_tokens: -1 }), undefined);
  strictEqual(limit({ truncate_prompt_tokens: null }), undefined);
  strictEqual(limit({}), undefined);
});

Deno.test("VllmBackend.coerceOutputBudget() reads caps as vLLM's lax integers", () => {
  const backend = new VllmBackend({ url: "http://127.0.0.1:8000/tokenize" });
  const table: [unknown, number | undefined][] = [
    [5, 5],
    [5.0, 5],
    ["5", 5],
    [" 5 ", 5],
    ["\t5\n", 5],
    ["+5", 5],
    ["5.0", 5],
    ["5.", 5],
    ["1_0", 10],
    ["1_000_000", 1_000_000],
    [true, 1],
    [false, undefined],
    [0, undefined],
    ["0", undefined],
    [-5, undefined],
    ["-5", undefined],
    ["1.5", undefined],
    [1.5, undefined],
    ["abc", undefined],
    ["", undefined],
    [" ", undefined],
    ["_10", undefined],
    ["10_", undefined],
    ["1__0", undefined],
    ["1_0.0", undefined],
    ["0x10", undefined],
    ["1e3", undefined],
    [null, undefined],
    [undefined, undefined],
    [Number.NaN, undefined],
    [Number.POSITIVE_INFINITY, undefined],
    [2 ** 53, undefined],
    [[5], undefined],
    [{ value: 5 }, undefined],
  ];
  for (const [value, expected] of table) {
    strictEqual(
      backend.coerceOutputBudget(value),
      expected,
      `coerceOutputBudget(${JSON.stringify(value)})`,
    );
  }
});

Deno.test("VllmBackend.outputBudgetField() maps max_output_tokens to max_tokens", () => {
  const backend = new VllmBackend({ url: "http://127.0.0.1:8000/tokenize" });
  strictEqual(backend.outputBudgetField("max_output_tokens"), "max_tokens");
  strictEqual(backend.outputBudgetField("max_tokens"), "max_tokens");
  strictEqual(
    backend.outputBudgetField("max_completion_tokens"),
    "max_completion_tokens",
  );
  strictEqual(backend.source, "vllm-tokenize");
});

Deno.test("new VllmBackend() reads no cache", async (t) => {
  await t.step("construction reads no cache", () => {
    // Would start the shared cache's worker and fail the leak check if it did.
    new VllmBackend({ url: "http://127.0.0.1:8000/tokenize" });
  });
});

Deno.test("VllmBackend.count() never mutates the request", async () => {
  await using server = await serve();
  const request = {
    model: "m",
    messages: [
      { role: "user", content: [{ type: "text", text: "Hi" }] },
      { role: "assistant", reasoning_content: "r", content: "a" },
    ],
    tools: [{ type: "function", function: { name: "f", parameters: {} } }],
    documents: [{ title: "d" }],
    reasoning_effort: "low",
    chat_template_kwargs: { keep: true },
    truncate_prompt_tokens: 3,
    extra_body: {
      chat_template_kwargs: { nested: true },
      messages: [{ role: "user", reasoning_content: "x" }],
    },
  };
  const before = structuredClone(request);
  deepFreeze(request);
  await backendFor(server).count(request, OPTIONS);
  deepStrictEqual(request, before);
});

function deepFreeze(value: unknown): void {
  if (typeof value !== "object" || value === null) return;
  Object.freeze(value);
  for (const child of Object.values(value)) deepFreeze(child);
}

Deno.test("VllmBackend.count() logs counts at debug level", async () => {
  await using logs = await captureLogs();
  await using server = await serve(() => 21);
  await backendFor(server).count(HELLO, OPTIONS);
  ok(
    logs.lines.some((line) =>
      line.startsWith(
        "incontext.vllm debug Counted 21 prompt tokens with vllm-tokenize",
      )
    ),
  );
  ok(logs.lines.every((line) => line.includes(" debug ")));
});

Deno.test("VllmBackend.count() caches counts", async (t) => {
  await t.step(
    "100 concurrent identical counts make one HTTP request",
    async () => {
      await using server = await serve();
      await using cache = createCountCache();
      const backend = backendFor(server, { cache });
      const counts = await Promise.all(
        Array.from({ length: 100 }, () => backend.count(HELLO, OPTIONS)),
      );
      strictEqual(new Set(counts).size, 1);
      strictEqual(server.requests.length, 1);
    },
  );

  await t.step(
    "clearCache() makes the next count ask the server again",
    async () => {
      await using server = await serve();
      await using cache = createCountCache();
      const backend = backendFor(server, { cache });
      await backend.count(HELLO, OPTIONS);
      await backend.clearCache();
      await backend.count(HELLO, OPTIONS);
      strictEqual(server.requests.length, 2);
    },
  );

  await t.step(
    "different payloads, context lengths and servers get their own entries",
    async () => {
      await using one = await serve(() => 1);
      await using two = await serve(() => 2);
      await using cache = createCountCache();
      strictEqual(await backendFor(one, { cache }).count(HELLO, OPTIONS), 1);
      strictEqual(await backendFor(two, { cache }).count(HELLO, OPTIONS), 2);
      strictEqual(
        await backendFor(one, { cache }).count({ messages: [] }, OPTIONS),
        1,
      );
      await kit.countError(
        backendFor(one, { cache }).count(HELLO, { contextLength: 4096 }),
      );
      strictEqual(one.requests.length + two.requests.length, 4);
    },
  );

  await t.step(
    "a caller that aborts leaves the count to the others",
    async () => {
      const fake = createFakeVllmTokenizerHandler({
        maxModelLen: CONTEXT,
        countTokens: () => 5,
      });
      let release = (): void => {};
      const gate = new Promise<void>((resolve) => release = resolve);
      let started = (): void => {};
      const leading = new Promise<void>((resolve) => started = resolve);
      const gatedFetch = async (
        input: string | URL | Request,
        init?: RequestInit,
      ) => {
        started();
        await gate;
        return fake.fetch(input, init);
      };
      await using cache = createCountCache();
      const backend = new VllmBackend({
        url: "http://fake.test/tokenize",
        cache,
        fetch: gatedFetch,
      });
      const controller = new AbortController();
      const leader = backend.count(HELLO, {
        ...OPTIONS,
        signal: controller.signal,
      });
      await leading;
      const follower = backend.count(HELLO, OPTIONS);
      controller.abort();
      strictEqual(
        (await kit.countError(leader)).message,
        "vLLM /tokenize count was aborted",
      );
      release();
      strictEqual(await follower, 5);
      strictEqual(fake.requests.length, 1);
    },
  );

  await t.step("clearCache() without a cache resolves", async () => {
    await new VllmBackend({
      url: "http://127.0.0.1:8000/tokenize",
      cache: null,
    }).clearCache();
  });
});

Deno.test("VllmBackend.count() works through an injected fetch", async () => {
  const fake = createFakeVllmTokenizerHandler({
    maxModelLen: CONTEXT,
    countTokens: () => 3,
  });
  const backend = new VllmBackend({
    url: "http://fake.test/tokenize",
    cache: null,
    fetch: fake.fetch,
  });
  strictEqual(await backend.count(HELLO, OPTIONS), 3);
  fake.fault = "refused";
  strictEqual(
    (await kit.countError(backend.count(HELLO, OPTIONS))).message,
    "vLLM /tokenize request failed: TypeError",
  );
  strictEqual(fake.requests.length, 1);
});

Deno.test("VllmBackend.count() writes NaN and the infinities in /tokenize as vLLM's json.loads reads them", async () => {
  const sent: string[] = [];
  const backend = new VllmBackend({
    url: "http://fake.test/tokenize",
    cache: null,
    fetch: (_input, init) => {
      sent.push(String(init?.body));
      return Promise.resolve(
        Response.json({ count: 9, max_model_len: CONTEXT, tokens: [] }),
      );
    },
  });
  const schema = { type: "number", minimum: -Infinity, maximum: Infinity };
  const request: JsonObject = {
    ...HELLO,
    tools: [{
      type: "function",
      function: {
        name: "f",
        parameters: { type: "object", properties: { x: schema }, default: NaN },
      },
    }],
  };
  strictEqual(await backend.count(request, OPTIONS), 9);
  const text = sent[0] ?? "";
  ok(text.includes('"minimum":-Infinity,"maximum":Infinity'), text);
  ok(text.includes('"default":NaN'), text);
  // A request without them is written as JSON.stringify writes it.
  await backend.count(HELLO, OPTIONS);
  ok(!/NaN|Infinity/.test(sent[1] ?? ""), sent[1]);
});

Deno.test("VllmBackend sends Mistral's tool-call ids and lists when the model is served in mistral mode", async (t) => {
  const long = "call_0123456789abcdef";
  const messages = [
    { role: "user", content: "Weather?" },
    {
      role: "assistant",
      content: null,
      tool_calls: [{
        id: long,
        type: "function",
        function: { name: "w", arguments: "{}" },
      }],
    },
    { role: "tool", tool_call_id: long, content: "sunny" },
    { role: "assistant", content: "Sunny." },
  ];
  const request: JsonObject = { messages };
  const sent = async (options: Partial<VllmBackendOptions>) => {
    await using server = await serve();
    await backendFor(server, options).count(request, OPTIONS);
    return JSON.parse(server.requests[0]!.text).messages;
  };
  const mistral = [
    messages[0],
    {
      role: "assistant",
      content: null,
      tool_calls: [{
        id: "456789abcdef".slice(-9),
        type: "function",
        function: { name: "w", arguments: "{}" },
      }],
    },
    { role: "tool", tool_call_id: "789abcdef", content: "sunny" },
    { role: "assistant", content: "Sunny.", tool_calls: [] },
  ];
  await t.step("said by the tokenizer mode", async () => {
    deepStrictEqual(await sent({ tokenizerMode: "Mistral" }), mistral);
  });
  await t.step("resolved from a Mistral folder under auto", async () => {
    const modelDir =
      new URL("../../fixtures/mistral_snapshot/", import.meta.url)
        .pathname;
    deepStrictEqual(await sent({ modelDir }), mistral);
    deepStrictEqual(
      await sent({ modelDir, tokenizerMode: "hf" }),
      request.messages,
    );
  });
  await t.step(
    "any other folder, or none, sends the messages as given",
    async () => {
      const modelDir = new URL("../../fixtures/model_folder/", import.meta.url)
        .pathname;
      deepStrictEqual(await sent({ modelDir }), messages);
      deepStrictEqual(await sent({}), messages);
    },
  );
  await t.step("an unknown mode fails at construction", () => {
    let error: unknown;
    try {
      new VllmBackend({
        url: "http://127.0.0.1:1/tokenize",
        tokenizerMode: "mistal",
      });
    } catch (caught) {
      error = caught;
    }
    ok(error instanceof RangeError);
  });
});
