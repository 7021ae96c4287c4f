// Covers: src/backends/llamacpp/llamacpp_backend.ts, src/backends/llamacpp/payload.ts
import { deepStrictEqual, ok, strictEqual, throws } from "node:assert/strict";
import type { JsonObject } from "../../../src/core/backend.ts";
import { budget } from "../../../src/core/budget.ts";
import { loadConfig } from "../../../src/config/mod.ts";
import { ConfigError } from "../../../src/core/config_error.ts";
import { TemplateRejectedError } from "../../../src/core/errors.ts";
import {
  createFakeLlamaCppHandler,
  type FakeLlamaCppFault,
  type FakeLlamaCppServer,
  serveFakeLlamaCpp,
} from "../../../src/testing/fake_llamacpp_server.ts";
import {
  LlamaCppBackend,
  type LlamaCppBackendOptions,
  llamaCppFromConfig,
} from "../../../src/backends/llamacpp/mod.ts";
import * as kit from "../../_kit/backend_kit.ts";

const CONTEXT = 8192;
const OPTIONS = { contextLength: CONTEXT };
const HELLO: JsonObject = { messages: [{ role: "user", content: "Hello" }] };
/** The fake's rendering of HELLO. */
const HELLO_PROMPT =
  "<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n";

function serve(
  options: Parameters<typeof serveFakeLlamaCpp>[0] = {},
): Promise<FakeLlamaCppServer> {
  return serveFakeLlamaCpp({ nCtx: CONTEXT, ...options });
}

function backendFor(
  server: { readonly url: string },
  options: Partial<LlamaCppBackendOptions> = {},
): LlamaCppBackend {
  return new LlamaCppBackend({ url: server.url, cache: null, ...options });
}

function paths(server: FakeLlamaCppServer): string[] {
  return server.requests.map((r) => `${r.method} ${r.path}`);
}

Deno.test("LlamaCppBackend.count() renders with /apply-template, then tokenizes the prompt", async (t) => {
  await t.step(
    "chat: the prompt-shaping fields, in order, nothing added",
    async () => {
      await using server = await serve();
      const request = {
        temperature: 0.2,
        stream: true,
        max_tokens: 100,
        n_predict: 50,
        reasoning_format: "none",
        add_generation_prompt: true,
        chat_template_kwargs: { enable_thinking: false },
        grammar: "root ::= .*",
        json_schema: { type: "object" },
        response_format: { type: "text" },
        parallel_tool_calls: false,
        tool_choice: "auto",
        tools: [{ type: "function", function: { name: "f", parameters: {} } }],
        messages: [{ content: "Hi", role: "user" }],
        model: "qwen3",
        reasoning_effort: "high",
      };
      await backendFor(server).count(request, OPTIONS);
      deepStrictEqual(paths(server), [
        "GET /props",
        "POST /apply-template",
        "POST /tokenize",
      ]);
      strictEqual(
        server.requests[1]!.text,
        '{"model":"qwen3","messages":[{"content":"Hi","role":"user"}],' +
          '"tools":[{"type":"function","function":{"name":"f","parameters":{}}}],' +
          '"tool_choice":"auto","parallel_tool_calls":false,"response_format":{"type":"text"},' +
          '"json_schema":{"type":"object"},"grammar":"root ::= .*",' +
          '"chat_template_kwargs":{"enable_thinking":false},"add_generation_prompt":true,' +
          '"reasoning_format":"none"}',
      );
    },
  );

  await t.step(
    "the rendered prompt is tokenized with special tokens",
    async () => {
      await using server = await serve();
      strictEqual(await backendFor(server).count(HELLO, OPTIONS), 10);
      strictEqual(
        server.requests[1]!.text,
        '{"messages":[{"role":"user","content":"Hello"}]}',
      );
      strictEqual(
        server.requests[2]!.text,
        JSON.stringify({
          content: HELLO_PROMPT,
          add_special: true,
          parse_special: true,
        }),
      );
    },
  );

  await t.step("extra_body wins over the top level", async () => {
    await using server = await serve();
    await backendFor(server).count({
      model: "top",
      messages: [{ role: "user", content: "top" }],
      tools: [{ type: "function", function: { name: "top" } }],
      extra_body: {
        model: "nested",
        messages: [{ role: "user", content: "nested" }],
        tools: [],
      },
    }, OPTIONS);
    strictEqual(
      server.requests[1]!.text,
      '{"model":"nested","messages":[{"role":"user","content":"nested"}],"tools":[]}',
    );
  });

  await t.step("a completion prompt goes to /tokenize alone", async () => {
    await using server = await serve();
    const count = await backendFor(server).count(
      { model: "m", prompt: "Once upon a time" },
      { ...OPTIONS, kind: "completion" },
    );
    deepStrictEqual(paths(server), ["GET /props", "POST /tokenize"]);
    strictEqual(
      server.requests[1]!.text,
      '{"content":"Once upon a time","add_special":true,"parse_special":true}',
    );
    strictEqual(count, 8); // BOS, 4 words, 3 spaces
  });

  await t.step("a Responses request is counted in its chat form", async () => {
    await using server = await serve();
    await backendFor(server).count(
      { model: "m", instructions: "Be brief.", input: "Hi" },
      { ...OPTIONS, kind: "responses" },
    );
    strictEqual(
      server.requests[1]!.text,
      '{"model":"m","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Hi"}]}',
    );
  });

  await t.step(
    "the count is what the chat endpoint sees as prompt_tokens",
    async () => {
      await using server = await serve();
      const request = {
        messages: [
          { role: "system", content: "You are terse." },
          { role: "user", content: "Tell me about tokenizers, briefly." },
          {
            role: "assistant",
            content: null,
            tool_calls: [{
              id: "1",
              type: "function",
              function: { name: "f", arguments: "{}" },
            }],
          },
          { role: "tool", tool_call_id: "1", content: "42" },
        ],
        tools: [{ type: "function", function: { name: "f", parameters: {} } }],
      };
      const count = await backendFor(server).count(request, OPTIONS);
      const answer = await fetch(`${server.url}/v1/chat/completions`, {
        method: "POST",
        body: JSON.stringify(request),
      }).then((r) => r.json());
      strictEqual(count, answer.usage.prompt_tokens);
    },
  );
});

Deno.test("LlamaCppBackend.count() fails requests it cannot count before any HTTP call", async (t) => {
  await using server = await serve();
  const backend = backendFor(server);
  const refused: [string, JsonObject, RequestKindOption, string][] = [
    [
      "an image",
      {
        messages: [{
          role: "user",
          content: [{ type: "image_url", image_url: { url: "data:," } }],
        }],
      },
      {},
      "llama.cpp /tokenize cannot count images or audio",
    ],
    [
      "audio",
      {
        messages: [{
          role: "user",
          content: [{
            type: "input_audio",
            input_audio: { data: "", format: "wav" },
          }],
        }],
      },
      {},
      "llama.cpp /tokenize cannot count images or audio",
    ],
    [
      "no messages array",
      { prompt: "Hi" },
      {},
      "Cannot count the request as 'messages' is not an array",
    ],
    [
      "a token-array prompt",
      { prompt: [1, 2] },
      { kind: "completion" },
      "Cannot count the completion as 'prompt' is not a single string",
    ],
  ];
  for (const [name, request, kind, message] of refused) {
    await t.step(name, async () => {
      const error = await kit.countError(
        backend.count(request, { ...OPTIONS, ...kind }),
      );
      strictEqual(error.message, message);
      strictEqual(server.requests.length, 0);
    });
  }
});

type RequestKindOption = { kind?: "chat" | "completion" | "responses" };

Deno.test("LlamaCppBackend.count() fails on a wrong key with /props' 401", async () => {
  await using server = await serve({ apiKey: "sk-right" });
  const error = await kit.countError(
    backendFor(server, { apiKey: "sk-wrong" }).count(HELLO, OPTIONS),
  );
  strictEqual(error.message, "llama.cpp /props answered HTTP 401");
});

Deno.test("LlamaCppBackend.count() checks n_ctx from /props once per instance", async (t) => {
  await t.step(
    "one /props for many counts, concurrent ones included",
    async () => {
      await using server = await serve();
      const backend = backendFor(server);
      await Promise.all(
        Array.from({ length: 5 }, () => backend.count(HELLO, OPTIONS)),
      );
      await backend.count({ messages: [] }, OPTIONS);
      strictEqual(server.requests.filter((r) => r.path === "/props").length, 1);
    },
  );

  await t.step(
    "an n_ctx that differs fails every count, naming both numbers",
    async () => {
      await using server = await serve();
      const backend = backendFor(server);
      for (let attempt = 0; attempt < 2; attempt++) {
        const error = await kit.countError(
          backend.count(HELLO, { contextLength: 4096 }),
        );
        strictEqual(
          error.message,
          "llama.cpp n_ctx does not match the configured context length: 8192 != 4096",
        );
      }
      deepStrictEqual(paths(server), ["GET /props"]);
    },
  );

  await t.step("a failed /props is read again by the next count", async () => {
    await using server = await serve({ fault: "http-503" });
    server.faultPath = "/props";
    const backend = backendFor(server);
    strictEqual(
      (await kit.countError(backend.count(HELLO, OPTIONS))).message,
      "llama.cpp /props answered HTTP 503",
    );
    server.fault = "none";
    strictEqual(await backend.count(HELLO, OPTIONS), 10);
    strictEqual(server.requests.filter((r) => r.path === "/props").length, 2);
  });

  await t.step("clearCache() reads /props again", async () => {
    await using server = await serve();
    const backend = backendFor(server);
    await backend.count(HELLO, OPTIONS);
    await backend.clearCache();
    await backend.count(HELLO, OPTIONS);
    strictEqual(server.requests.filter((r) => r.path === "/props").length, 2);
  });
});

const FAULTS: readonly [FakeLlamaCppFault, string, string][] = [
  ["http-429", "/props", "llama.cpp /props answered HTTP 429"],
  [
    "http-500",
    "/apply-template",
    "llama.cpp /apply-template answered HTTP 500",
  ],
  ["http-503", "/tokenize", "llama.cpp /tokenize answered HTTP 503"],
  ["http-429", "/tokenize", "llama.cpp /tokenize answered HTTP 429"],
  ["non-json", "/tokenize", "llama.cpp /tokenize returned a non-JSON response"],
  [
    "truncated-json",
    "/apply-template",
    "llama.cpp /apply-template returned a non-JSON response",
  ],
  [
    "non-object",
    "/tokenize",
    "llama.cpp /tokenize returned a non-object response",
  ],
  [
    "invalid-prompt",
    "/apply-template",
    "llama.cpp /apply-template returned an invalid prompt",
  ],
  [
    "invalid-tokens",
    "/tokenize",
    "llama.cpp /tokenize returned invalid tokens",
  ],
  ["invalid-n-ctx", "/props", "llama.cpp /props returned an invalid n_ctx"],
  ["reset", "/tokenize", "llama.cpp request failed: TypeError"],
  ["refused", "/props", "llama.cpp request failed: TypeError"],
];

Deno.test("LlamaCppBackend.count() fails with a CountError on every server fault, with no retry", async (t) => {
  await kit.pathFaultSteps(
    t,
    serve,
    FAULTS,
    (server) => backendFor(server).count(HELLO, OPTIONS),
  );

  await t.step(
    "oversized answers are read no further than the cap",
    async () => {
      for (const path of ["/props", "/apply-template", "/tokenize"]) {
        await using server = await serve({ fault: "oversized" });
        server.faultPath = path;
        const error = await kit.countError(
          backendFor(server).count(HELLO, OPTIONS),
        );
        ok(
          error.message.startsWith(`llama.cpp ${path} answered more than `),
          error.message,
        );
      }
    },
  );

  await t.step("a slow endpoint times out", async () => {
    for (const path of ["/props", "/tokenize"]) {
      await using server = await serve({ fault: "slow" });
      server.faultPath = path;
      const error = await kit.countError(
        backendFor(server, { timeoutSeconds: 0.05 }).count(HELLO, OPTIONS),
      );
      strictEqual(error.message, "llama.cpp did not answer within 0.05 s");
      ok(error.cause instanceof Error);
    }
  });
});

Deno.test("LlamaCppBackend.count() reports a request llama.cpp rejects as TemplateRejectedError", async (t) => {
  await using server = await serve();
  const backend = backendFor(server);
  const invalid = { messages: [{ role: "user" }] }; // no content: llama.cpp answers 400

  await t.step("count() rejects without estimating", async () => {
    const error = await kit.countError(backend.count(invalid, OPTIONS));
    ok(error instanceof TemplateRejectedError);
    strictEqual(
      error.message,
      "llama.cpp /apply-template rejects this request (its chat endpoint would too)",
    );
  });

  await t.step("budget() leaves the request unchanged", async () => {
    const result = await budget(invalid, {
      window: 6000,
      contextLength: CONTEXT,
      backend,
    });
    strictEqual(result.action, "unchanged");
    strictEqual(result.request, invalid);
  });

  await t.step("a 500 is a failed count, not a rejection", async () => {
    server.fault = "http-500";
    const error = await kit.countError(backend.count(HELLO, OPTIONS));
    ok(!(error instanceof TemplateRejectedError));
  });
});

Deno.test("LlamaCppBackend.count() rejects with a CountError when aborted", async (t) => {
  await kit.abortWhileHeldStep(t, {
    path: "/tokenize",
    fake: createFakeLlamaCppHandler({ nCtx: CONTEXT, fault: "slow" }),
    backend: (fetch) =>
      new LlamaCppBackend({ url: "http://llama.test", cache: null, fetch }),
    request: HELLO,
    options: OPTIONS,
    message: "llama.cpp count was aborted",
  });

  await t.step(
    "a caller that aborts during /props leaves the load to the others",
    async () => {
      let release = (): void => {};
      const gate = new Promise<void>((resolve) => release = resolve);
      const fake = createFakeLlamaCppHandler({ nCtx: CONTEXT });
      const backend = new LlamaCppBackend({
        url: "http://llama.test",
        cache: null,
        fetch: async (input, init) => {
          if (String(input).endsWith("/props")) await gate;
          return fake.fetch(input, init);
        },
      });
      const controller = new AbortController();
      const leader = backend.count(HELLO, {
        ...OPTIONS,
        signal: controller.signal,
      });
      const follower = backend.count(HELLO, OPTIONS);
      controller.abort();
      strictEqual(
        (await kit.countError(leader)).message,
        "llama.cpp count was aborted",
      );
      release();
      strictEqual(await follower, 10);
      strictEqual(fake.requests.filter((r) => r.path === "/props").length, 1);
    },
  );
});

Deno.test("LlamaCppBackend reads and writes caps as llama.cpp does", async (t) => {
  const backend = new LlamaCppBackend({ url: "http://127.0.0.1:8080" });
  const chat = { kind: "chat", defaultField: "max_tokens" } as const;

  await t.step("coerceOutputBudget() is nlohmann's get<int>", () => {
    const table: [unknown, number | undefined][] = [
      [512, 512],
      [512.9, 512],
      [true, 1],
      [false, undefined],
      ["512", undefined],
      [0, undefined],
      [-1, undefined],
      [0.5, undefined],
      [null, undefined],
      [2 ** 31, undefined],
      [Number.NaN, undefined],
    ];
    for (const [value, expected] of table) {
      strictEqual(backend.coerceOutputBudget(value), expected, String(value));
    }
  });

  await t.step(
    "readCaps() reads n_predict at both levels, the smallest wins",
    () => {
      deepStrictEqual(
        backend.readCaps(
          { messages: [], max_tokens: 900, n_predict: 400 },
          chat,
        ),
        { value: 400, field: "max_tokens" },
      );
      deepStrictEqual(
        backend.readCaps({
          messages: [],
          n_predict: 900,
          extra_body: { n_predict: 300 },
        }, chat),
        { value: 300, field: "max_tokens" },
      );
      deepStrictEqual(
        backend.readCaps({
          messages: [],
          n_predict: -1,
          max_completion_tokens: 700,
        }, chat),
        { value: 700, field: "max_tokens" },
      );
      deepStrictEqual(
        backend.readCaps({ input: "x", max_output_tokens: 50 }, {
          kind: "responses",
          defaultField: "max_output_tokens",
        }),
        { value: 50, field: "max_output_tokens" },
      );
    },
  );

  await t.step("writeCap() removes n_predict and every other alias", () => {
    const request = {
      messages: [],
      n_predict: 9000,
      max_completion_tokens: 8000,
      extra_body: { n_predict: -1, max_tokens: 7000, top_k: 1 },
    };
    const before = structuredClone(request);
    deepStrictEqual(backend.writeCap(request, "max_tokens", 600), {
      messages: [],
      extra_body: { top_k: 1 },
      max_tokens: 600,
    });
    deepStrictEqual(request, before);
    const plain = { messages: [] };
    deepStrictEqual(backend.writeCap(plain, "max_tokens", 5), {
      messages: [],
      max_tokens: 5,
    });
  });

  await t.step(
    "the output limit is n_ctx - P: llama.cpp does not check max_tokens",
    () => {
      strictEqual(
        backend.outputBudgetLimit(HELLO, { ...OPTIONS, promptTokens: 1000 }),
        CONTEXT - 1000,
      );
      strictEqual(
        backend.outputBudgetLimit(HELLO, { ...OPTIONS, promptTokens: 9000 }),
        0,
      );
      strictEqual(
        backend.outputBudgetField("max_completion_tokens"),
        "max_tokens",
      );
      strictEqual(
        backend.outputBudgetField("max_output_tokens", { kind: "completion" }),
        "max_tokens",
      );
      strictEqual(backend.source, "llamacpp-tokenize");
    },
  );
});

Deno.test("budget() through LlamaCppBackend sets max_tokens that the fake llama.cpp accepts", async (t) => {
  await using server = await serve();
  const backend = backendFor(server);
  const send = (request: JsonObject) =>
    fetch(`${server.url}/v1/chat/completions`, {
      method: "POST",
      body: JSON.stringify(request),
    });

  await t.step(
    "set: max_tokens = W - P, caller aliases and n_predict removed",
    async () => {
      const request = {
        model: "m",
        messages: [{
          role: "user",
          content: "Write a poem about context windows.",
        }],
        max_completion_tokens: 65536,
        n_predict: -1,
      };
      const result = await budget(request, {
        window: 6000,
        contextLength: CONTEXT,
        backend,
      });
      strictEqual(result.action, "set");
      strictEqual(result.source, "llamacpp-tokenize");
      strictEqual(result.field, "max_tokens");
      strictEqual(result.maxTokens, 6000 - result.promptTokens!);
      deepStrictEqual(result.request, {
        model: "m",
        messages: request.messages,
        max_tokens: 6000 - result.promptTokens!,
      });
      await kit.assertAcceptedWith(send(result.request), result.promptTokens);
    },
  );

  await t.step("compress: a prompt past the window", async () => {
    const long = {
      messages: [{ role: "user", content: "word ".repeat(3500) }],
    };
    const result = await budget(long, {
      window: 6000,
      contextLength: CONTEXT,
      backend,
    });
    strictEqual(result.action, "compress");
    ok(result.promptTokens! > 6000);
    strictEqual(result.hardLimitTokens, CONTEXT - result.promptTokens!);
  });

  await t.step(
    "a prompt past n_ctx, which llama.cpp rejects, is never sent budgeted",
    async () => {
      const huge = {
        messages: [{ role: "user", content: "word ".repeat(5000) }],
      };
      const result = await budget(huge, {
        window: 6000,
        contextLength: CONTEXT,
        backend,
      });
      strictEqual(result.action, "compress");
      const answer = await send(huge);
      strictEqual(answer.status, 400);
      const { error } = await answer.json();
      strictEqual(error.type, "exceed_context_size_error");
      strictEqual(error.n_prompt_tokens, result.promptTokens);
      strictEqual(error.n_ctx, CONTEXT);
    },
  );

  await t.step("the server failing: rough fallback", async () => {
    const result = await kit.budgetUnderFault(server, "http-500", HELLO, {
      window: 6000,
      contextLength: CONTEXT,
      backend,
    });
    strictEqual(result.action, "set");
  });
});

Deno.test("LlamaCppBackend passes the backend conformance suite", async (t) => {
  await kit.servedConformance(t, serve, backendFor, CONTEXT);
});

Deno.test("llamaCppFromConfig() builds the backend from INCONTEXT_TOKENIZER_URL", () => {
  const base = loadConfig({ INCONTEXT_TOKENIZER_URL: "http://127.0.0.1:8080" });
  strictEqual(llamaCppFromConfig(base).source, "llamacpp-tokenize");
  const { tokenizerUrl: _url, ...rest } = base;
  throws(() => llamaCppFromConfig(rest), (error: unknown) => {
    ok(error instanceof ConfigError);
    ok(error.message.includes("INCONTEXT_TOKENIZER_URL"));
    return true;
  });
});

Deno.test("the fake llama.cpp server speaks llama.cpp's protocol", async (t) => {
  await t.step("options and faults are checked", () => {
    throws(() => createFakeLlamaCppHandler({ nCtx: 0 }), RangeError);
    const fake = createFakeLlamaCppHandler();
    throws(() => fake.fault = "bogus" as FakeLlamaCppFault, RangeError);
  });

  await t.step(
    "--api-key: 401 with llama.cpp's body, /health stays public",
    async () => {
      await using server = await serve({ apiKey: "sk-right" });
      const denied = await fetch(`${server.url}/props`);
      strictEqual(denied.status, 401);
      deepStrictEqual(await denied.json(), {
        error: {
          code: 401,
          message: "Invalid API Key",
          type: "authentication_error",
        },
      });
      const health = await fetch(`${server.url}/health`);
      deepStrictEqual(await health.json(), { status: "ok" });
      const keyed = await fetch(`${server.url}/props`, {
        headers: { "X-Api-Key": "sk-right" },
      });
      strictEqual(
        (await keyed.json()).default_generation_settings.n_ctx,
        CONTEXT,
      );
    },
  );

  await t.step(
    "a last assistant message is a prefill, as in llama.cpp",
    async () => {
      const fake = createFakeLlamaCppHandler();
      const answer = await fake.fetch("http://llama.test/apply-template", {
        method: "POST",
        body: JSON.stringify({
          messages: [
            { role: "user", content: "Hi" },
            { role: "assistant", content: "Sure," },
          ],
        }),
      }).then((r) => r.json());
      strictEqual(
        answer.prompt,
        "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nSure,",
      );
    },
  );

  await t.step("disposing the server releases held requests", async () => {
    const server = await serve({ fault: "slow" });
    const held = fetch(`${server.url}/props`);
    await kit.untilRequested(server);
    const closing = server[Symbol.asyncDispose]();
    const answer = await held;
    strictEqual(answer.status, 503);
    await answer.body?.cancel();
    await closing;
  });
});
