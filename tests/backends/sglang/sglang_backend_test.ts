import { deepStrictEqual, ok, strictEqual, throws } from "node:assert/strict";
import { dirname } from "node:path";
import {
  Backend,
  type JsonObject,
  type OutputLimitOptions,
} from "../../../src/core/backend.ts";
import { CONFORMANCE_MARKER } from "../../../src/testing/backend_conformance.ts";
import { budget } from "../../../src/core/budget.ts";
import { ConfigError, loadConfig } from "../../../src/config/mod.ts";
import { createCountCache } from "../../../src/cache/mod.ts";
import { TemplateRejectedError } from "../../../src/core/errors.ts";
import {
  createFakeSglangHandler,
  type FakeSglang,
  type FakeSglangOptions,
  serveFakeSglang,
} from "../../../src/testing/fake_sglang_server.ts";
import { LocalBackend } from "../../../src/backends/local/mod.ts";
import {
  SglangBackend,
  type SglangBackendOptions,
  sglangFromConfig,
} from "../../../src/backends/sglang/mod.ts";
import * as kit from "../../_kit/backend_kit.ts";
import { captureLogs } from "../../_kit/log_capture.ts";
import { MODEL_FILES } from "../../_kit/model_files.ts";
import { timerTicksDuring } from "../../_kit/timer_ticks.ts";

const DIR = new URL("../../fixtures/model_folder/", import.meta.url).pathname;
const QWEN3 = dirname(
  MODEL_FILES.find((model) => model.family === "qwen3")!.tokenizerPath,
);
const CONTEXT = 8192;
const C = { contextLength: CONTEXT };
const HELLO: JsonObject = { messages: [{ role: "user", content: "Hello" }] };
/** A template whose render is easy to write down. */
const TAGS =
  "{{ bos_token }}{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}{% if add_generation_prompt %}<assistant>{% endif %}";
const RAISING = "{{ raise_exception('Conversation roles must alternate') }}";

function backendFor(
  server: { url: string },
  options: Partial<SglangBackendOptions> = {},
): SglangBackend {
  return new SglangBackend({
    url: server.url,
    dir: DIR,
    cache: null,
    ...options,
  });
}

function serve(options: FakeSglangOptions = {}): Promise<FakeSglang> {
  return serveFakeSglang(options);
}

Deno.test("SglangBackend.count() renders the chat locally and sends the text", async (t) => {
  await using server = await serve();
  await using backend = backendFor(server, { chatTemplate: TAGS });
  await t.step("the body is the render, without special tokens", async () => {
    const request = {
      model: "qwen3",
      messages: [
        { role: "system", content: "Be brief." },
        { role: "user", content: "Hello" },
      ],
      max_tokens: 100,
      temperature: 0.2,
    };
    const count = await backend.count(request, C);
    strictEqual(
      server.requests[0]?.text,
      JSON.stringify({
        prompt: "<s><system>Be brief.<user>Hello<assistant>",
        add_special_tokens: false,
      }),
    );
    // The fake counts words and punctuation marks: <, s, >, <, system, >, Be,
    // brief, ., <, user, >, Hello, <, assistant, >.
    strictEqual(count, 16);
  });
  await t.step("the request line and headers", () => {
    kit.assertEverySent(server.requests.slice(0, 1), {
      method: "POST",
      path: "/tokenize",
      headers: kit.DEFAULT_HEADERS,
    });
  });
  await t.step(
    "vLLM's preprocessing applies: add_generation_prompt false",
    async () => {
      server.requests.length = 0;
      await backend.count({ ...HELLO, add_generation_prompt: false }, C);
      strictEqual(
        server.requests[0]?.text,
        '{"prompt":"<s><user>Hello","add_special_tokens":false}',
      );
    },
  );
  await t.step("a Responses request is rendered as its chat", async () => {
    server.requests.length = 0;
    await backend.count(
      { instructions: "Be brief.", input: "Hello" },
      { ...C, kind: "responses" },
    );
    strictEqual(
      JSON.parse(server.requests[0]!.text).prompt,
      "<s><system>Be brief.<user>Hello<assistant>",
    );
  });
  await t.step(
    "a completion sends its prompt with special tokens, loading no files",
    async () => {
      server.requests.length = 0;
      await using remote = new SglangBackend({
        url: server.url,
        dir: "/nonexistent/model",
        cache: null,
      });
      strictEqual(
        await remote.count({ prompt: "Once upon" }, {
          ...C,
          kind: "completion",
        }),
        3,
      );
      strictEqual(
        server.requests[0]?.text,
        '{"prompt":"Once upon","add_special_tokens":true}',
      );
    },
  );
});

Deno.test("SglangBackend.count() takes the context from configuration, not max_model_len", async () => {
  // SGLang's max_model_len is its tokenizer's: larger or smaller, it is ignored.
  for (const maxModelLen of [131072, 2048]) {
    await using server = await serve({ maxModelLen });
    await using backend = backendFor(server);
    strictEqual(await backend.count(HELLO, C), 4); // "<s>Hello": <, s, >, Hello
  }
});

Deno.test("SglangBackend.count() fails before any HTTP call when the render cannot count", async (t) => {
  await using server = await serve();
  await t.step("a template that raises: TemplateRejectedError", async () => {
    await using backend = backendFor(server, { chatTemplate: RAISING });
    const error = await kit.countError(backend.count(HELLO, C));
    ok(error instanceof TemplateRejectedError);
    const result = await budget(HELLO, {
      window: 8000,
      contextLength: CONTEXT,
      backend,
    });
    strictEqual(result.action, "unchanged");
    strictEqual(result.request, HELLO);
  });
  await t.step("TemplateRejectedError survives the count cache", async () => {
    await using cache = createCountCache({ inProcess: true });
    await using backend = backendFor(server, { chatTemplate: RAISING, cache });
    ok(
      await kit.countError(backend.count(HELLO, C)) instanceof
        TemplateRejectedError,
    );
  });
  await t.step(
    "a request's own chat_template, a response_format, media",
    async () => {
      await using backend = backendFor(server);
      const image = { type: "image_url", image_url: { url: "data:," } };
      for (
        const request of [
          { ...HELLO, chat_template: "{{ messages }}" },
          { ...HELLO, response_format: { type: "json_object" } },
          { messages: [{ role: "user", content: [image] }] },
        ]
      ) {
        const error = await kit.countError(backend.count(request, C));
        ok(!(error instanceof TemplateRejectedError));
      }
    },
  );
  await t.step("a completion without a prompt string", async () => {
    await using backend = backendFor(server);
    await kit.countError(
      backend.count({ prompt: 3 }, { ...C, kind: "completion" }),
    );
  });
  await t.step("a missing model folder, and a wrong SHA-256", async () => {
    await using missing = backendFor(server, { dir: "/nonexistent/model" });
    await kit.countError(missing.count(HELLO, C));
    await using wrong = backendFor(server, { expectedSha256: "0".repeat(64) });
    await kit.countError(wrong.count(HELLO, C));
  });
  await t.step("a disposed backend", async () => {
    const backend = backendFor(server);
    await backend[Symbol.asyncDispose]();
    await kit.countError(backend.count(HELLO, C));
  });
  strictEqual(server.requests.length, 0);
});

Deno.test("createFakeSglangHandler() speaks SGLang's text-only /tokenize", async (t) => {
  const fake = createFakeSglangHandler({ maxModelLen: 40960 });
  const post = (body: unknown, path = "/tokenize") =>
    fake.fetch(`http://fake.test${path}`, {
      method: "POST",
      body: JSON.stringify(body),
    });
  await t.step("text in, tokens, count and max_model_len out", async () => {
    const answer =
      await (await post({ prompt: "a b", add_special_tokens: true })).json();
    strictEqual(answer.count, 3);
    strictEqual(answer.tokens.length, 3);
    strictEqual(answer.tokens[0], 1);
    strictEqual(answer.max_model_len, 40960);
  });
  await t.step(
    "add_special_tokens defaults to true, as SGLang's does",
    async () => {
      strictEqual((await (await post({ prompt: "a b" })).json()).count, 3);
    },
  );
  await t.step("a chat body is a 400 in SGLang's error shape", async () => {
    const response = await post({
      messages: [{ role: "user", content: "Hi" }],
    });
    strictEqual(response.status, 400);
    const body = await response.json();
    strictEqual(body.object, "error");
    strictEqual(body.code, 400);
    ok(body.message.includes("prompt"));
  });
  await t.step("other paths are 404", async () => {
    strictEqual((await post({ prompt: "x" }, "/v1/chat/tokenize")).status, 404);
  });
  await t.step("longer text counts more", async () => {
    const short = (await (await post({ prompt: "one two" })).json()).count;
    const long =
      (await (await post({ prompt: "one two three four" })).json()).count;
    ok(long > short);
  });
});

/** budget() hands the counted prompt to outputBudgetLimit (a contract proposal). */
async function budgetPassesPromptTokens(): Promise<boolean> {
  let seen = false;
  class Probe extends Backend {
    readonly source = "probe";
    count(): Promise<number> {
      return Promise.resolve(10);
    }
    override outputBudgetLimit(
      _request: JsonObject,
      options: OutputLimitOptions & { promptTokens?: number },
    ): undefined {
      seen = options.promptTokens === 10;
      return undefined;
    }
  }
  await budget(HELLO, {
    window: 8000,
    contextLength: CONTEXT,
    backend: new Probe(),
  });
  return seen;
}

Deno.test("SglangBackend.outputBudgetLimit() leaves one token of the context free", async (t) => {
  const backend = new SglangBackend({ url: "http://127.0.0.1:1", dir: DIR });
  await t.step("context - 1 - prompt", () => {
    strictEqual(
      backend.outputBudgetLimit({}, { contextLength: 8192, promptTokens: 100 }),
      8091,
    );
  });
  await t.step(
    "the edge: a prompt of context - 1 leaves 0, a larger one too",
    () => {
      strictEqual(
        backend.outputBudgetLimit({}, {
          contextLength: 8192,
          promptTokens: 8191,
        }),
        0,
      );
      strictEqual(
        backend.outputBudgetLimit({}, {
          contextLength: 8192,
          promptTokens: 8190,
        }),
        1,
      );
      strictEqual(
        backend.outputBudgetLimit({}, {
          contextLength: 8192,
          promptTokens: 9000,
        }),
        0,
      );
    },
  );
  await t.step("without the prompt, context - 1", () => {
    strictEqual(backend.outputBudgetLimit({}, { contextLength: 8192 }), 8191);
  });
});

Deno.test({
  name: "budget() with SglangBackend keeps prompt + max_tokens <= context - 1",
  ignore: !await budgetPassesPromptTokens(),
  fn: async (t) => {
    await using server = await serve();
    await using backend = backendFor(server);
    const tuning = {
      window: CONTEXT,
      contextLength: CONTEXT,
      fallbackMarginTokens: 0,
      minOutputTokens: 1,
      backend,
    };
    await t.step("set: the window is the whole context", async () => {
      const result = await budget({ ...HELLO, max_tokens: CONTEXT }, tuning);
      strictEqual(result.action, "set");
      strictEqual(result.promptTokens! + result.maxTokens!, CONTEXT - 1);
    });
    await t.step("compress: the hard limit leaves one token", async () => {
      const result = await budget({ ...HELLO, max_tokens: CONTEXT }, {
        ...tuning,
        minOutputTokens: CONTEXT - 2,
      });
      strictEqual(result.action, "compress");
      strictEqual(result.promptTokens! + result.hardLimitTokens!, CONTEXT - 1);
    });
  },
});

Deno.test("budget() with SglangBackend writes max_tokens from the exact count", async () => {
  await using server = await serve();
  await using backend = backendFor(server);
  const request = {
    ...HELLO,
    max_completion_tokens: "9000",
    max_output_tokens: 5,
  };
  const result = await budget(request, {
    window: 6000,
    contextLength: CONTEXT,
    backend,
  });
  strictEqual(result.source, "sglang-tokenize");
  strictEqual(result.action, "set");
  // max_output_tokens is not a chat cap for SGLang: the smallest cap is 5, written as max_tokens.
  strictEqual(result.maxTokens, 5);
  deepStrictEqual(result.request, { ...HELLO, max_tokens: 5 });
  const open = await budget(HELLO, {
    window: 6000,
    contextLength: CONTEXT,
    backend,
  });
  strictEqual(open.maxTokens, 6000 - 4);
});

Deno.test("SglangBackend.count() keys its cache by template", async (t) => {
  await using server = await serve();
  await t.step("another template is another key", async () => {
    server.requests.length = 0;
    await using cache = createCountCache({ inProcess: true });
    await using plain = backendFor(server, { cache });
    await using tagged = backendFor(server, { cache, chatTemplate: TAGS });
    const a = await plain.count(HELLO, C);
    const b = await tagged.count(HELLO, C);
    ok(a !== b);
    strictEqual(server.requests.length, 2);
  });
});

Deno.test("new SglangBackend() checks its model folder options", async (t) => {
  const valid = { url: "http://127.0.0.1:30000", dir: DIR };
  await t.step("dir and expectedSha256", () => {
    throws(() => new SglangBackend({ ...valid, dir: "" }), TypeError);
    throws(
      () => new SglangBackend({ ...valid, expectedSha256: "abc" }),
      TypeError,
    );
  });
});

Deno.test("sglangFromConfig() requires the URL and the model folder, listed together", async (t) => {
  const registry = { registry: { requirements: () => [] } };
  await t.step("both missing: one error naming both", () => {
    const config = loadConfig({ INCONTEXT_BACKEND: "sglang" }, registry);
    throws(() => sglangFromConfig(config), (error: unknown) => {
      ok(error instanceof ConfigError);
      deepStrictEqual(
        error.issues.map((issue) => issue.variable),
        ["INCONTEXT_TOKENIZER_URL", "INCONTEXT_TOKENIZER_DIR"],
      );
      return true;
    });
  });
  await t.step("one missing: that one", () => {
    const config = loadConfig({
      INCONTEXT_BACKEND: "sglang",
      INCONTEXT_TOKENIZER_URL: "http://127.0.0.1:30000",
    }, registry);
    throws(() => sglangFromConfig(config), (error: unknown) => {
      ok(error instanceof ConfigError);
      deepStrictEqual(error.issues.map((i) => i.variable), [
        "INCONTEXT_TOKENIZER_DIR",
      ]);
      return true;
    });
  });
  await t.step(
    "both given: a backend sending the self-hosted key only",
    async () => {
      await using server = await serve();
      const config = loadConfig({
        INCONTEXT_BACKEND: "sglang",
        INCONTEXT_TOKENIZER_URL: server.url,
        INCONTEXT_TOKENIZER_DIR: DIR,
        INCONTEXT_TOKENIZER_API_KEY: "sk-self-hosted",
        INCONTEXT_OPENAI_API_KEY: "sk-openai",
        INCONTEXT_CHAT_TEMPLATE: TAGS,
      }, registry);
      const backend = sglangFromConfig(config) as SglangBackend;
      strictEqual(backend.source, "sglang-tokenize");
      await backend.count({
        messages: [{ role: "user", content: crypto.randomUUID() }],
      }, C);
      strictEqual(
        server.requests[0]?.headers["authorization"],
        "Bearer sk-self-hosted",
      );
      ok(JSON.parse(server.requests[0]!.text).prompt.startsWith("<s><user>"));
      await backend[Symbol.asyncDispose]();
    },
  );
});

Deno.test("SglangBackend.count() keeps the prompt out of a raising template's error and logs", async () => {
  const { prompt } = kit.canary();
  const request = { messages: [{ role: "user", content: `Say ${prompt}` }] };
  await using logs = await captureLogs();
  await using server = await serve();
  await using backend = backendFor(server, {
    chatTemplate: "{{ raise_exception(messages[0].content) }}",
  });
  const error = await kit.countError(backend.count(request, C));
  ok(logs.lines.length > 0);
  kit.assertNoLeak([...kit.errorTexts(error), ...logs.lines], [prompt]);
  strictEqual(server.requests.length, 0);
});

/** Chat requests Qwen3's template renders in different ways. */
const QWEN3_REQUESTS: JsonObject[] = [
  { messages: [{ role: "user", content: "Hello there" }] },
  {
    messages: [
      { role: "system", content: "You are terse." },
      { role: "user", content: "Weather in Paris and 東京? 🌦" },
      {
        role: "assistant",
        content: "",
        reasoning_content: "Call the tool.",
        tool_calls: [{
          id: "c1",
          type: "function",
          function: { name: "get_weather", arguments: '{"city": "Paris"}' },
        }],
      },
      { role: "tool", tool_call_id: "c1", content: '{"temp": 21.5}' },
    ],
    tools: [{
      type: "function",
      function: {
        name: "get_weather",
        description: "Current weather in a city",
        parameters: {
          type: "object",
          properties: { city: { type: "string" } },
          required: ["city"],
        },
      },
    }],
  },
  {
    messages: [
      { role: "user", content: "Think first." },
      { role: "assistant", content: "<think>\nok\n</think>\n\nDone." },
      { role: "user", content: "Again, without thinking." },
    ],
    chat_template_kwargs: { enable_thinking: false },
  },
];

Deno.test("SglangBackend.count() equals the local backend's count with Qwen3's real files", async (t) => {
  await using local = new LocalBackend({ dir: QWEN3, cache: null });
  // A protocol-faithful /tokenize that tokenizes text with the real tokenizer.
  await using server = await serve({
    tokenize: (text, addSpecialTokens) =>
      local.tokenize({ prompt: text, add_special_tokens: addSpecialTokens }),
  });
  await using backend = new SglangBackend({
    url: server.url,
    dir: QWEN3,
    cache: null,
  });
  for (const [index, request] of QWEN3_REQUESTS.entries()) {
    await t.step(`conversation ${index + 1}`, async () => {
      const expected = await local.count(request, C);
      strictEqual(await backend.count(request, C), expected);
      ok(expected > 5);
    });
  }
  await t.step("a completion too", async () => {
    const options = { ...C, kind: "completion" } as const;
    const request = { prompt: "Once upon a time" };
    strictEqual(
      await backend.count(request, options),
      await local.count(request, options),
    );
  });
});

Deno.test("conformance: SglangBackend against the protocol server", async (t) => {
  await using server = await serve();
  await using failing = await serve({ fault: "http-500" });
  const made: SglangBackend[] = [];
  const make = (url: string) => {
    const backend = new SglangBackend({ url, dir: QWEN3, cache: null });
    made.push(backend);
    return backend;
  };
  await kit.runConformance(t, {
    create: () => make(server.url),
    createFailing: () => make(failing.url),
    contextLength: CONTEXT,
    request: {
      model: "qwen3",
      messages: [
        { role: "system", content: "You are a terse assistant." },
        { role: "user", content: `Say hello. ${CONFORMANCE_MARKER}` },
      ],
    },
  });
  for (const backend of made) await backend[Symbol.asyncDispose]();
});

Deno.test("SglangBackend loads and renders in the count cache's worker", async (t) => {
  await using local = new LocalBackend({ dir: QWEN3, cache: null });
  await using server = await serve({
    tokenize: (text, addSpecialTokens) =>
      local.tokenize({ prompt: text, add_special_tokens: addSpecialTokens }),
  });
  await using cache = createCountCache();
  await using inWorker = new SglangBackend({
    url: server.url,
    dir: QWEN3,
    cache,
  });
  await using here = new SglangBackend({
    url: server.url,
    dir: QWEN3,
    cache: null,
  });
  await t.step("the same counts, the same text sent, one load", async () => {
    for (const request of QWEN3_REQUESTS) {
      const before = server.requests.length;
      strictEqual(
        await inWorker.count(request, C),
        await here.count(request, C),
      );
      const [sent, sentHere] = server.requests.slice(before);
      deepStrictEqual(sent, sentHere);
    }
    strictEqual(cache.kind, "worker_threads");
    strictEqual((await cache.stats()).modelLoads, 1);
    strictEqual(
      (await inWorker.load()).tokenizer,
      (await here.load()).tokenizer,
    );
  });
  await t.step(
    "this thread's event loop turns while the worker loads",
    async () => {
      await using gemma = new SglangBackend({
        url: server.url,
        dir: dirname(
          MODEL_FILES.find((m) => m.family === "gemma3")!.tokenizerPath,
        ),
        cache,
      });
      const { ticks } = await timerTicksDuring(() => gemma.load());
      ok(ticks >= 3, `the timer chain ran ${ticks} times during the load`);
    },
  );
  await t.step("a disposed backend fails its chat counts", async () => {
    const backend = new SglangBackend({ url: server.url, dir: QWEN3, cache });
    await backend.count(HELLO, C);
    await backend[Symbol.asyncDispose]();
    await kit.countError(backend.count(HELLO, C));
  });
});
