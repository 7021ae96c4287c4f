// Covers: src/backends/tgi/tgi_backend.ts, src/backends/tgi/payload.ts
import { deepStrictEqual, ok, strictEqual, throws } from "node:assert/strict";
import type { JsonObject } from "../../../src/core/backend.ts";
import { budget } from "../../../src/core/budget.ts";
import { loadConfig } from "../../../src/config/mod.ts";
import { ConfigError } from "../../../src/core/config_error.ts";
import { TemplateRejectedError } from "../../../src/core/errors.ts";
import {
  createFakeTgiHandler,
  type FakeTgiFault,
  type FakeTgiOptions,
  type FakeTgiServer,
  serveFakeTgi,
} from "../../../src/testing/fake_tgi_server.ts";
import {
  TgiBackend,
  type TgiBackendOptions,
  tgiFromConfig,
} from "../../../src/backends/tgi/mod.ts";
import * as kit from "../../_kit/backend_kit.ts";

const CONTEXT = 8192;
const OPTIONS = { contextLength: CONTEXT };
const HELLO: JsonObject = { messages: [{ role: "user", content: "Hello" }] };

function serve(options: FakeTgiOptions = {}): Promise<FakeTgiServer> {
  return serveFakeTgi({ maxTotalTokens: CONTEXT, ...options });
}

function backendFor(
  server: { readonly url: string },
  options: Partial<TgiBackendOptions> = {},
): TgiBackend {
  return new TgiBackend({ url: server.url, cache: null, ...options });
}

function paths(server: FakeTgiServer): string[] {
  return server.requests.map((r) => `${r.method} ${r.path}`);
}

function send(server: FakeTgiServer, request: JsonObject): Promise<Response> {
  return fetch(`${server.url}/v1/chat/completions`, {
    method: "POST",
    body: JSON.stringify(request),
  });
}

Deno.test("TgiBackend.count() posts the chat request to /chat_tokenize", async (t) => {
  await t.step(
    "the prompt-shaping fields, in order, nothing added",
    async () => {
      await using server = await serve();
      await backendFor(server).count({
        stream: true,
        temperature: 0.5,
        max_tokens: 100,
        guideline: "Be safe.",
        tool_prompt: "Use tools:",
        tool_choice: "auto",
        tools: [{ type: "function", function: { name: "f", parameters: {} } }],
        messages: [{ content: "Hi", role: "user" }],
        model: "tgi",
        chat_template_kwargs: { enable_thinking: false },
      }, OPTIONS);
      deepStrictEqual(paths(server), ["GET /info", "POST /chat_tokenize"]);
      strictEqual(
        server.requests[1]!.text,
        '{"model":"tgi","messages":[{"content":"Hi","role":"user"}],' +
          '"tools":[{"type":"function","function":{"name":"f","parameters":{}}}],' +
          '"tool_choice":"auto","tool_prompt":"Use tools:","guideline":"Be safe."}',
      );
    },
  );

  await t.step("the count is the length of tokenize_response", async () => {
    await using server = await serve();
    strictEqual(await backendFor(server).count(HELLO, OPTIONS), 10);
    strictEqual(server.requests[1]!.text, JSON.stringify(HELLO));
  });

  await t.step("extra_body wins over the top level", async () => {
    await using server = await serve();
    await backendFor(server).count({
      model: "top",
      messages: [{ role: "user", content: "top" }],
      extra_body: {
        model: "nested",
        messages: [{ role: "user", content: "nested" }],
      },
    }, OPTIONS);
    strictEqual(
      server.requests[1]!.text,
      '{"model":"nested","messages":[{"role":"user","content":"nested"}]}',
    );
  });

  await t.step(
    "a completion prompt goes to /tokenize as {inputs}",
    async () => {
      await using server = await serve();
      const count = await backendFor(server).count(
        { prompt: "Once upon a time" },
        { ...OPTIONS, kind: "completion" },
      );
      deepStrictEqual(paths(server), ["GET /info", "POST /tokenize"]);
      strictEqual(server.requests[1]!.text, '{"inputs":"Once upon a time"}');
      strictEqual(count, 8); // BOS, 4 words, 3 spaces
    },
  );

  await t.step("a Responses request is counted in its chat form", async () => {
    await using server = await serve();
    await backendFor(server).count(
      { instructions: "Be brief.", input: "Hi" },
      { ...OPTIONS, kind: "responses" },
    );
    strictEqual(
      server.requests[1]!.text,
      '{"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Hi"}]}',
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
        ],
        tools: [{ type: "function", function: { name: "f", parameters: {} } }],
      };
      const count = await backendFor(server).count(request, OPTIONS);
      const answer = await (await send(server, request)).json();
      strictEqual(count, answer.usage.prompt_tokens);
    },
  );

  await t.step("no messages array: no HTTP call", async () => {
    await using server = await serve();
    const error = await kit.countError(
      backendFor(server).count({ prompt: "x" }, OPTIONS),
    );
    strictEqual(
      error.message,
      "Cannot count the request as 'messages' is not an array",
    );
    strictEqual(server.requests.length, 0);
  });
});

Deno.test("TgiBackend.count() fails on a wrong key with /info's 401", async () => {
  await using server = await serve({ apiKey: "sk-right" });
  const error = await kit.countError(
    backendFor(server, { apiKey: "sk-wrong" }).count(HELLO, OPTIONS),
  );
  strictEqual(error.message, "TGI /info answered HTTP 401");
});

Deno.test("TgiBackend.count() checks /info once per instance", async (t) => {
  await t.step("one /info for many counts", async () => {
    await using server = await serve();
    const backend = backendFor(server);
    await Promise.all(
      Array.from({ length: 5 }, () => backend.count(HELLO, OPTIONS)),
    );
    await backend.count({ messages: [] }, OPTIONS);
    strictEqual(server.requests.filter((r) => r.path === "/info").length, 1);
  });

  await t.step(
    "a max_total_tokens that differs fails, naming both numbers",
    async () => {
      await using server = await serve();
      const error = await kit.countError(
        backendFor(server).count(HELLO, { contextLength: 4096 }),
      );
      strictEqual(
        error.message,
        "TGI max_total_tokens does not match the configured context length: 8192 != 4096",
      );
      deepStrictEqual(paths(server), ["GET /info"]);
    },
  );

  await t.step(
    "a failed /info is read again; clearCache() reads it again",
    async () => {
      await using server = await serve({ fault: "invalid-info" });
      server.faultPath = "/info";
      const backend = backendFor(server);
      strictEqual(
        (await kit.countError(backend.count(HELLO, OPTIONS))).message,
        "TGI /info returned an invalid max_total_tokens",
      );
      server.fault = "none";
      strictEqual(await backend.count(HELLO, OPTIONS), 10);
      await backend.clearCache();
      await backend.count(HELLO, OPTIONS);
      strictEqual(server.requests.filter((r) => r.path === "/info").length, 3);
    },
  );
});

Deno.test("TgiBackend.count() keeps budgets TGI would reject from being written", async (t) => {
  // max_input_tokens 2000 below max_total_tokens 8192: TGI's --max-input-tokens.
  await using server = await serve({ maxInputTokens: 2000 });
  const backend = backendFor(server);
  const words = (n: number) => ({
    messages: [{ role: "user", content: "word ".repeat(n) }],
  });

  await t.step(
    "a prompt over max_input_tokens makes budget() ask for compression",
    async () => {
      const request = words(1500); // about 3000 tokens: over the input limit, below the context
      const count = await backend.count(request, OPTIONS);
      ok(count > 2000 && count < 6000 - 100, String(count));
      strictEqual(
        backend.outputBudgetLimit(request, { ...OPTIONS, promptTokens: count }),
        0,
      );
      for (const window of [6000, 1800]) {
        const result = await budget(request, {
          window,
          contextLength: CONTEXT,
          backend,
          minOutputTokens: 100,
        });
        strictEqual(result.action, "compress");
        strictEqual(result.promptTokens, count);
        strictEqual(result.hardLimitTokens, 0);
        strictEqual(result.request, request);
      }
      // What TGI itself answers to that prompt, whatever its max_tokens.
      const refused = await send(server, { ...request, max_tokens: 10 });
      strictEqual(refused.status, 422);
      ok(
        (await refused.json()).error.includes(
          "must have less than 2000 tokens",
        ),
      );
    },
  );

  await t.step(
    "a prompt within max_input_tokens is budgeted and accepted",
    async () => {
      const request = { ...words(500), max_tokens: 100_000 };
      const result = await budget(request, {
        window: 6000,
        contextLength: CONTEXT,
        backend,
      });
      strictEqual(result.action, "set");
      strictEqual(result.field, "max_tokens");
      strictEqual(result.maxTokens, 6000 - result.promptTokens!);
      strictEqual((await send(server, request)).status, 422); // as sent by the caller
      await kit.assertAcceptedWith(
        send(server, result.request),
        result.promptTokens,
      );
    },
  );

  await t.step(
    "a prompt past max_total_tokens is counted: budget() asks to compress",
    async () => {
      const request = words(4500);
      const count = await backend.count(request, OPTIONS);
      ok(typeof count === "number" && count >= CONTEXT);
      const result = await budget(request, {
        window: 6000,
        contextLength: CONTEXT,
        backend,
      });
      strictEqual(result.action, "compress");
    },
  );

  await t.step("TGI's 422 on /chat_tokenize is a rejection", async () => {
    const invalid = { messages: [{ content: "no role" }] };
    const error = await kit.countError(backend.count(invalid, OPTIONS));
    ok(error instanceof TemplateRejectedError);
    strictEqual(
      error.message,
      "TGI /chat_tokenize rejects this request (its generation endpoint would too)",
    );
  });
});

const FAULTS: readonly [FakeTgiFault, string, string][] = [
  ["http-429", "/info", "TGI /info answered HTTP 429"],
  ["http-500", "/chat_tokenize", "TGI /chat_tokenize answered HTTP 500"],
  ["http-503", "/chat_tokenize", "TGI /chat_tokenize answered HTTP 503"],
  ["http-429", "/chat_tokenize", "TGI /chat_tokenize answered HTTP 429"],
  [
    "non-json",
    "/chat_tokenize",
    "TGI /chat_tokenize returned a non-JSON response",
  ],
  ["truncated-json", "/info", "TGI /info returned a non-JSON response"],
  [
    "non-object",
    "/chat_tokenize",
    "TGI /chat_tokenize returned a non-object response",
  ],
  [
    "invalid-tokens",
    "/chat_tokenize",
    "TGI /chat_tokenize returned invalid tokens",
  ],
  ["invalid-info", "/info", "TGI /info returned an invalid max_total_tokens"],
  ["reset", "/chat_tokenize", "TGI request failed: TypeError"],
  ["refused", "/info", "TGI request failed: TypeError"],
];

Deno.test("TgiBackend.count() fails with a CountError on every server fault, with no retry", async (t) => {
  await kit.pathFaultSteps(
    t,
    serve,
    FAULTS,
    (server) => backendFor(server).count(HELLO, OPTIONS),
  );

  await t.step("completion faults on /tokenize", async () => {
    const completion = { ...OPTIONS, kind: "completion" } as const;
    const cases: [FakeTgiFault, string][] = [
      ["invalid-tokens", "TGI /tokenize returned invalid tokens"],
      ["non-object", "TGI /tokenize returned invalid tokens"],
      ["truncated-json", "TGI /tokenize returned a non-JSON response"],
      ["http-500", "TGI /tokenize answered HTTP 500"],
    ];
    for (const [fault, message] of cases) {
      await using server = await serve({ fault });
      server.faultPath = "/tokenize";
      const error = await kit.countError(
        backendFor(server).count({ prompt: "Hi" }, completion),
      );
      strictEqual(error.message, message);
    }
  });

  await t.step(
    "oversized answers are read no further than the cap",
    async () => {
      for (
        const [path, kind] of [["/info", "chat"], ["/chat_tokenize", "chat"], [
          "/tokenize",
          "completion",
        ]] as const
      ) {
        await using server = await serve({ fault: "oversized" });
        server.faultPath = path;
        const error = await kit.countError(
          backendFor(server).count({ ...HELLO, prompt: "Hi" }, {
            ...OPTIONS,
            kind,
          }),
        );
        ok(
          error.message.startsWith(`TGI ${path} answered more than `),
          error.message,
        );
      }
    },
  );

  await t.step("a slow endpoint times out", async () => {
    for (const path of ["/info", "/chat_tokenize"]) {
      await using server = await serve({ fault: "slow" });
      server.faultPath = path;
      const error = await kit.countError(
        backendFor(server, { timeoutSeconds: 0.05 }).count(HELLO, OPTIONS),
      );
      strictEqual(error.message, "TGI did not answer within 0.05 s");
    }
  });
});

Deno.test("TgiBackend.count() rejects with a CountError when aborted during /chat_tokenize", async (t) => {
  await kit.abortWhileHeldStep(t, {
    path: "/chat_tokenize",
    fake: createFakeTgiHandler({
      maxTotalTokens: CONTEXT,
      fault: "slow",
    }),
    backend: (fetch) =>
      new TgiBackend({ url: "http://tgi.test", cache: null, fetch }),
    request: HELLO,
    options: OPTIONS,
    message: "TGI count was aborted",
  });
});

Deno.test("TgiBackend reads and writes caps as TGI does", () => {
  const backend = new TgiBackend({ url: "http://127.0.0.1:3000" });
  const table: [unknown, number | undefined][] = [
    [512, 512],
    [512.5, undefined],
    ["512", undefined],
    [true, undefined],
    [0, undefined],
    [2 ** 32 - 1, 2 ** 32 - 1],
    [2 ** 32, undefined],
  ];
  for (const [value, expected] of table) {
    strictEqual(backend.coerceOutputBudget(value), expected, String(value));
  }
  deepStrictEqual(
    backend.readCaps({ messages: [], max_completion_tokens: 900 }, {
      kind: "chat",
      defaultField: "max_tokens",
    }),
    { value: 900, field: "max_tokens" },
  );
  deepStrictEqual(
    backend.writeCap(
      { messages: [], max_completion_tokens: 900 },
      "max_tokens",
      5,
    ),
    { messages: [], max_tokens: 5 },
  );
  strictEqual(
    backend.outputBudgetField("max_output_tokens", { kind: "responses" }),
    "max_output_tokens",
  );
  // max_total_tokens - P; /info not read yet, so no max_input_tokens check.
  strictEqual(
    backend.outputBudgetLimit(HELLO, { ...OPTIONS, promptTokens: 1000 }),
    CONTEXT - 1000,
  );
  strictEqual(
    backend.outputBudgetLimit(HELLO, { ...OPTIONS, promptTokens: 9000 }),
    0,
  );
  strictEqual(backend.outputBudgetLimit(HELLO, OPTIONS), CONTEXT);
  strictEqual(backend.source, "tgi-chat-tokenize");
});

Deno.test("budget() through TgiBackend sets max_tokens that the fake TGI accepts", async (t) => {
  await using server = await serve();
  const backend = backendFor(server);

  await t.step(
    "set: max_tokens = W - P; the caller's oversized cap would be a 422",
    async () => {
      const request = {
        model: "tgi",
        messages: [{
          role: "user",
          content: "Write a poem about context windows.",
        }],
        max_tokens: CONTEXT,
      };
      strictEqual((await send(server, request)).status, 422);
      const result = await budget(request, {
        window: 6000,
        contextLength: CONTEXT,
        backend,
      });
      strictEqual(result.action, "set");
      strictEqual(result.source, "tgi-chat-tokenize");
      strictEqual(result.field, "max_tokens");
      strictEqual(result.request.max_tokens, 6000 - result.promptTokens!);
      await kit.assertAcceptedWith(
        send(server, result.request),
        result.promptTokens,
      );
    },
  );

  await t.step(
    "the window at the full context: prompt + max_tokens = max_total_tokens",
    async () => {
      const result = await budget(HELLO, {
        window: CONTEXT,
        contextLength: CONTEXT,
        backend,
      });
      strictEqual(result.action, "set");
      strictEqual(result.promptTokens! + result.maxTokens!, CONTEXT);
      strictEqual((await send(server, result.request)).status, 200);
    },
  );

  await t.step("the server failing: rough fallback", async () => {
    await kit.budgetUnderFault(server, "http-503", HELLO, {
      window: 6000,
      contextLength: CONTEXT,
      backend,
    });
  });
});

Deno.test("TgiBackend passes the backend conformance suite", async (t) => {
  await kit.servedConformance(t, serve, backendFor, CONTEXT);
});

Deno.test("tgiFromConfig() builds the backend from INCONTEXT_TOKENIZER_URL", () => {
  const base = loadConfig({ INCONTEXT_TOKENIZER_URL: "http://127.0.0.1:3000" });
  strictEqual(tgiFromConfig(base).source, "tgi-chat-tokenize");
  const { tokenizerUrl: _url, ...rest } = base;
  throws(() => tgiFromConfig(rest), (error: unknown) => {
    ok(error instanceof ConfigError);
    ok(error.message.includes("INCONTEXT_TOKENIZER_URL"));
    return true;
  });
});

Deno.test("the fake TGI server speaks TGI's protocol", async (t) => {
  await t.step("options and faults are checked", () => {
    throws(() => createFakeTgiHandler({ maxTotalTokens: 0 }), RangeError);
    throws(
      () => createFakeTgiHandler({ maxTotalTokens: 10, maxInputTokens: 10 }),
      RangeError,
    );
    const fake = createFakeTgiHandler();
    throws(() => fake.fault = "bogus" as FakeTgiFault, RangeError);
  });

  await t.step(
    "/info and /health; --api-key answers an empty 401",
    async () => {
      await using server = await serve({ apiKey: "sk-right" });
      const denied = await fetch(`${server.url}/info`);
      strictEqual(denied.status, 401);
      strictEqual(await denied.text(), "");
      const info = await fetch(`${server.url}/info`, {
        headers: { Authorization: "Bearer sk-right" },
      }).then((r) => r.json());
      strictEqual(info.max_total_tokens, CONTEXT);
      strictEqual(info.max_input_tokens, CONTEXT - 1);
    },
  );

  await t.step("422 with TGI's validation body", async () => {
    await using server = await serve();
    const answer = await send(server, { ...HELLO, max_tokens: CONTEXT });
    strictEqual(answer.status, 422);
    const body = await answer.json();
    strictEqual(body.error_type, "validation");
    ok(
      body.error.startsWith(
        "Input validation error: `inputs` tokens + `max_new_tokens` must be <= 8192.",
      ),
    );
  });

  await t.step(
    "/tokenize answers a list of {id, text, start, stop}",
    async () => {
      const fake = createFakeTgiHandler();
      const tokens = await fake.fetch("http://tgi.test/tokenize", {
        method: "POST",
        body: JSON.stringify({ inputs: "Hi there" }),
      }).then((r) => r.json());
      deepStrictEqual(tokens.map((token: { text: string }) => token.text), [
        "",
        "Hi",
        " ",
        "there",
      ]);
    },
  );
});
