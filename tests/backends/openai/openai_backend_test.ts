// Covers: src/backends/openai/openai_backend.ts, src/backends/openai/chat_estimate.ts
import {
  deepStrictEqual,
  ok,
  rejects,
  strictEqual,
  throws,
} from "node:assert/strict";
import type { JsonObject } from "../../../src/core/backend.ts";
import { CONFORMANCE_MARKER } from "../../../src/testing/backend_conformance.ts";
import { budget } from "../../../src/core/budget.ts";
import { loadConfig } from "../../../src/config/mod.ts";
import { createCountCache } from "../../../src/cache/mod.ts";
import {
  createFakeOpenAIHandler,
  serveFakeOpenAI,
} from "../../../src/testing/fake_openai_server.ts";
import {
  OpenAIBackend,
  openAIFromConfig,
} from "../../../src/backends/openai/mod.ts";
import * as kit from "../../_kit/backend_kit.ts";
import { captureLogs } from "../../_kit/log_capture.ts";

const CONTEXT = 128000;
const RESPONSES = { contextLength: CONTEXT, kind: "responses" } as const;
const CHAT = { contextLength: CONTEXT, kind: "chat" } as const;

/** The conversation of OpenAI's cookbook "How to count tokens with tiktoken". */
const COOKBOOK_MESSAGES = [
  {
    role: "system",
    content:
      "You are a helpful, pattern-following assistant that translates corporate jargon into plain English.",
  },
  {
    role: "system",
    name: "example_user",
    content: "New synergies will help drive top-line growth.",
  },
  {
    role: "system",
    name: "example_assistant",
    content: "Things working well together will increase revenue.",
  },
  {
    role: "system",
    name: "example_user",
    content:
      "Let's circle back when we have more bandwidth to touch base on opportunities for increased leverage.",
  },
  {
    role: "system",
    name: "example_assistant",
    content: "Let's talk later when we're less busy about how to do better.",
  },
  {
    role: "user",
    content:
      "This late pivot means we don't have time to boil the ocean for the client deliverable.",
  },
];

/** The cookbook's tool example (section 7). */
const COOKBOOK_TOOLS = [{
  type: "function",
  function: {
    name: "get_current_weather",
    description: "Get the current weather in a given location",
    parameters: {
      type: "object",
      properties: {
        location: {
          type: "string",
          description: "The city and state, e.g. San Francisco, CA",
        },
        unit: {
          type: "string",
          description: "The unit of temperature to return",
          enum: ["celsius", "fahrenheit"],
        },
      },
      required: ["location"],
    },
  },
}];

const COOKBOOK_TOOL_MESSAGES = [
  {
    role: "system",
    content:
      "You are a helpful assistant that can answer to questions about the weather.",
  },
  { role: "user", content: "What's the weather like in San Francisco?" },
];

function chat(model: string, extra: JsonObject = {}): JsonObject {
  return {
    model,
    messages: [{ role: "user", content: "Hello there" }],
    ...extra,
  };
}

Deno.test("OpenAIBackend.count() estimates chat requests as OpenAI's API counted the cookbook's samples", async (t) => {
  // The cookbook printed these figures next to `usage.prompt_tokens` from
  // the API for the same requests: the estimate reproduces them exactly.
  const backend = new OpenAIBackend({ cache: null });
  const cases = [
    ["gpt-4o", { messages: COOKBOOK_MESSAGES }, 124, "openai-o200k-estimate"],
    [
      "gpt-4o-mini",
      { messages: COOKBOOK_MESSAGES },
      124,
      "openai-o200k-estimate",
    ],
    ["gpt-4", { messages: COOKBOOK_MESSAGES }, 129, "openai-cl100k-estimate"],
    [
      "gpt-3.5-turbo",
      { messages: COOKBOOK_MESSAGES },
      129,
      "openai-cl100k-estimate",
    ],
    [
      "gpt-4o",
      { messages: COOKBOOK_TOOL_MESSAGES, tools: COOKBOOK_TOOLS },
      101,
      "openai-o200k-estimate",
    ],
    [
      "gpt-4",
      { messages: COOKBOOK_TOOL_MESSAGES, tools: COOKBOOK_TOOLS },
      105,
      "openai-cl100k-estimate",
    ],
  ] as const;
  for (const [model, body, tokens, source] of cases) {
    const name = `${model}${"tools" in body ? " with tools" : ""}: ${tokens}`;
    await t.step(name, async () => {
      deepStrictEqual(
        await backend.count({ model, ...body }, CHAT),
        { tokens, estimatedTokens: tokens, source },
      );
    });
  }
});

Deno.test("OpenAIBackend.count() picks the encoding from the model name", async (t) => {
  const backend = new OpenAIBackend({ cache: null });
  const o200k = [
    "gpt-4o",
    "gpt-4o-2024-08-06",
    "gpt-4.1-nano",
    "gpt-4.5-preview",
    "gpt-5",
    "gpt-5.2-codex",
    "o1",
    "o3-mini",
    "o4-mini-2025-04-16",
    "chatgpt-4o-latest",
    "openai/gpt-4o",
  ];
  const cl100k = ["gpt-4", "gpt-4-turbo", "gpt-4-0613", "gpt-3.5-turbo-0125"];
  await t.step("o200k_base families", async () => {
    for (const model of o200k) {
      const counted = await backend.count(chat(model), CHAT);
      strictEqual(counted.source, "openai-o200k-estimate", model);
    }
  });
  await t.step("cl100k_base families", async () => {
    for (const model of cl100k) {
      const counted = await backend.count(chat(model), CHAT);
      strictEqual(counted.source, "openai-cl100k-estimate", model);
    }
  });
  await t.step("the two encodings count differently", async () => {
    const text = "Ωμέγα 東京 ".repeat(30);
    const one = { messages: [{ role: "user", content: text }] };
    const a = await backend.count({ model: "gpt-4o", ...one }, CHAT);
    const b = await backend.count({ model: "gpt-4", ...one }, CHAT);
    ok(a.tokens !== b.tokens, `${a.tokens} == ${b.tokens}`);
  });
  await t.step("an unknown or missing model fails the count", async () => {
    for (const model of ["llama-3.1-8b", "gpt-40", "o5x", "text-davinci-003"]) {
      await kit.countError(backend.count(chat(model), CHAT));
    }
    await kit.countError(backend.count({ messages: [] }, CHAT));
  });
  await t.step("extra_body's model wins", async () => {
    const counted = await backend.count(
      { ...chat("llama"), extra_body: { model: "gpt-4o" } },
      CHAT,
    );
    strictEqual(counted.source, "openai-o200k-estimate");
  });
});

Deno.test("OpenAIBackend.count() estimates chat content as the API reads it", async (t) => {
  const backend = new OpenAIBackend({ cache: null });
  const count = async (messages: unknown[], extra: JsonObject = {}) =>
    (await backend.count({ model: "gpt-4o", messages, ...extra }, CHAT)).tokens;
  await t.step(
    "3 per message, the role, the text, and 3 to prime",
    async () => {
      // "user" and "Hello" are one o200k token each.
      strictEqual(await count([{ role: "user", content: "Hello" }]), 8);
      strictEqual(await count([]), 3);
    },
  );
  await t.step("a name costs its tokens plus 1", async () => {
    const plain = await count([{ role: "user", content: "Hello" }]);
    strictEqual(
      await count([{ role: "user", name: "bob", content: "Hello" }]),
      plain + 2,
    );
  });
  await t.step("text parts count like a string", async () => {
    strictEqual(
      await count([{
        role: "user",
        content: [{ type: "text", text: "Hello" }],
      }]),
      await count([{ role: "user", content: "Hello" }]),
    );
  });
  await t.step("special-token text counts as text", async () => {
    ok(
      await count([{ role: "user", content: "<|endoftext|><|im_start|>" }]) >
        9,
    );
  });
  await t.step("tool calls and tool results count", async () => {
    const call = {
      role: "assistant",
      content: null,
      tool_calls: [{
        id: "call_1",
        type: "function",
        function: { name: "get_weather", arguments: '{"city":"Paris"}' },
      }],
    };
    const result = { role: "tool", tool_call_id: "call_1", content: "21 C" };
    const before = await count([{ role: "user", content: "Hi" }]);
    const after = await count([{ role: "user", content: "Hi" }, call, result]);
    ok(after > before + 15, `${after} vs ${before}`);
  });
  await t.step("media parts, odd messages and odd tools fail", async () => {
    const image = { type: "image_url", image_url: { url: "data:," } };
    await kit.countError(
      backend.count(
        { model: "gpt-4o", messages: [{ role: "user", content: [image] }] },
        CHAT,
      ),
    );
    await kit.countError(
      backend.count({ model: "gpt-4o", messages: ["hi"] }, CHAT),
    );
    await kit.countError(
      backend.count(chat("gpt-4o", { tools: [{ type: "custom" }] }), CHAT),
    );
  });
  await t.step("the completions form fails without a request", async () => {
    const fake = createFakeOpenAIHandler();
    const remote = new OpenAIBackend({
      url: "http://fake.test",
      fetch: fake.fetch,
      cache: null,
    });
    await kit.countError(
      remote.count({ model: "gpt-3.5-turbo-instruct", prompt: "Hi" }, {
        contextLength: CONTEXT,
        kind: "completion",
      }),
    );
    strictEqual(fake.requests.length, 0);
  });
});

Deno.test("OpenAIBackend.count() counts Responses requests with /v1/responses/input_tokens", async (t) => {
  await using server = await serveFakeOpenAI({ apiKey: "sk-test" });
  const backend = new OpenAIBackend({
    url: server.url,
    apiKey: "sk-test",
    cache: null,
  });
  await t.step("an exact count from the answer", async () => {
    const request = { model: "gpt-5", input: "one two three" };
    deepStrictEqual(await backend.count(request, RESPONSES), {
      tokens: 5, // "one two three" with its quotes, by the fake's rule
      estimatedTokens: 0,
    });
  });
  await t.step(
    "the body keeps only the accepted fields, in order",
    async () => {
      server.requests.length = 0;
      const request = {
        stream: true,
        instructions: "Be brief.",
        model: "gpt-5",
        max_output_tokens: 1000,
        input: [{ role: "user", content: "Hi" }],
        temperature: 0.2,
        tools: [],
        reasoning: { effort: "low" },
        previous_response_id: "resp_1",
        extra_body: { truncation: "auto", store: false },
      };
      await backend.count(request, RESPONSES);
      strictEqual(
        server.requests[0]?.text,
        '{"instructions":"Be brief.","model":"gpt-5","input":[{"role":"user","content":"Hi"}],' +
          '"tools":[],"reasoning":{"effort":"low"},"previous_response_id":"resp_1","truncation":"auto"}',
      );
    },
  );
  await t.step("the request line and headers", () => {
    kit.assertEverySent(server.requests.slice(0, 1), {
      method: "POST",
      path: "/v1/responses/input_tokens",
      headers: { ...kit.DEFAULT_HEADERS, authorization: "Bearer sk-test" },
    });
  });
  await t.step("a base path and a query string are kept", async () => {
    const { fetch, urls: seen } = kit.urlRecorder({ input_tokens: 1 });
    const spy = new OpenAIBackend({
      url: "http://gateway.test/openai/?tenant=a",
      cache: null,
      fetch,
    });
    await spy.count({ input: "x" }, RESPONSES);
    deepStrictEqual(seen, [
      "http://gateway.test/openai/v1/responses/input_tokens?tenant=a",
    ]);
  });
  await t.step("a wrong key is a CountError", async () => {
    const wrong = new OpenAIBackend({
      url: server.url,
      apiKey: "sk-no",
      cache: null,
    });
    const error = await kit.countError(wrong.count({ input: "x" }, RESPONSES));
    ok(error.message.includes("401"), error.message);
  });
});

Deno.test("OpenAIBackend.count() fails at once on every server fault, without retrying", async (t) => {
  await using server = await serveFakeOpenAI();
  await kit.statusFaultSteps(
    t,
    server,
    kit.PLAIN_FAULTS,
    () =>
      new OpenAIBackend({ url: server.url, cache: null })
        .count({ model: "gpt-5", input: "Hi" }, RESPONSES),
  );
  await t.step("budget() falls back on a 429", async () => {
    const result = await kit.budgetUnderFault(server, "http-429", {
      model: "gpt-5",
      input: "Hi",
    }, {
      window: 100000,
      contextLength: CONTEXT,
      backend: new OpenAIBackend({ url: server.url, cache: null }),
    });
    strictEqual(result.action, "set");
  });
  await kit.abortWhileSlowStep(
    t,
    "a slow answer fails once the caller aborts",
    server,
    (signal) =>
      new OpenAIBackend({ url: server.url, cache: null })
        .count({ input: "Hi" }, { ...RESPONSES, signal }),
  );
});

Deno.test("OpenAIBackend writes the cap field OpenAI reads", async (t) => {
  const backend = new OpenAIBackend({ cache: null });
  await t.step("outputBudgetField() by kind", () => {
    for (
      const field of [
        "max_tokens",
        "max_completion_tokens",
        "max_output_tokens",
      ] as const
    ) {
      strictEqual(backend.outputBudgetField(field), "max_completion_tokens");
      strictEqual(
        backend.outputBudgetField(field, { kind: "chat" }),
        "max_completion_tokens",
      );
      strictEqual(
        backend.outputBudgetField(field, { kind: "responses" }),
        "max_output_tokens",
      );
      strictEqual(
        backend.outputBudgetField(field, { kind: "completion" }),
        "max_tokens",
      );
    }
  });
  await t.step(
    "budget() on a chat request keeps a margin for the estimate",
    async () => {
      const request = { ...chat("o3-mini"), max_tokens: 100000 };
      const result = await budget(request, {
        window: 100000,
        contextLength: CONTEXT,
        backend,
        fallbackMarginTokens: 1024,
      });
      strictEqual(result.action, "set");
      strictEqual(result.source, "openai-o200k-estimate");
      const prompt = result.promptTokens!;
      // The whole count is estimated, so the margin is min(F, P) = P here.
      strictEqual(result.maxTokens, 100000 - prompt - Math.min(1024, prompt));
      deepStrictEqual(result.request, {
        ...chat("o3-mini"),
        max_completion_tokens: result.maxTokens,
      });
    },
  );
  await t.step("budget() on a Responses request is exact", async () => {
    const fake = createFakeOpenAIHandler({ countTokens: () => 700 });
    const remote = new OpenAIBackend({
      url: "http://fake.test",
      fetch: fake.fetch,
      cache: null,
    });
    const request = {
      model: "gpt-5",
      input: "Hi",
      max_completion_tokens: 90000,
    };
    const result = await budget(request, {
      window: 50000,
      contextLength: CONTEXT,
      backend: remote,
    });
    strictEqual(result.source, "openai-input-tokens");
    strictEqual(result.maxTokens, 50000 - 700);
    deepStrictEqual(result.request, {
      model: "gpt-5",
      input: "Hi",
      max_output_tokens: 49300,
    });
  });
});

Deno.test("OpenAIBackend.count() caches counts", async (t) => {
  await t.step("a Responses count is asked once", async () => {
    const fake = createFakeOpenAIHandler();
    await using cache = createCountCache({ inProcess: true });
    const backend = new OpenAIBackend({
      url: "http://fake.test",
      fetch: fake.fetch,
      cache,
    });
    const request = { model: "gpt-5", input: "Hi" };
    deepStrictEqual(
      await backend.count(request, RESPONSES),
      await backend.count(request, RESPONSES),
    );
    strictEqual(fake.requests.length, 1);
  });
  await t.step("failures are not cached", async () => {
    const fake = createFakeOpenAIHandler({ fault: "http-500" });
    await using cache = createCountCache({ inProcess: true });
    const backend = new OpenAIBackend({
      url: "http://fake.test",
      fetch: fake.fetch,
      cache,
    });
    await kit.countError(backend.count({ input: "Hi" }, RESPONSES));
    fake.fault = "none";
    strictEqual(
      (await backend.count({ input: "Hi" }, RESPONSES)).estimatedTokens,
      0,
    );
    strictEqual(fake.requests.length, 2);
  });
  await t.step("a chat estimate is cached and stays an estimate", async () => {
    await using cache = createCountCache({ inProcess: true });
    const backend = new OpenAIBackend({ cache });
    const first = await backend.count(chat("gpt-4o"), CHAT);
    strictEqual((await cache.stats()).entries, 1);
    deepStrictEqual(await backend.count(chat("gpt-4o"), CHAT), first);
    strictEqual(first.source, "openai-o200k-estimate");
  });
});

Deno.test("new OpenAIBackend() validates its options", async (t) => {
  await t.step("URL rules, without echoing the URL", () => {
    for (
      const url of ["ftp://h/x", "http://user:sk-secret@h", "not a url", ""]
    ) {
      throws(() => new OpenAIBackend({ url }), (error: unknown) => {
        ok(error instanceof TypeError);
        ok(error.message.includes("'url'"));
        ok(!error.message.includes("sk-secret"));
        return true;
      });
    }
  });
  await t.step("timeoutSeconds must be finite and positive", () => {
    for (const timeoutSeconds of [0, -1, Infinity, NaN]) {
      throws(() => new OpenAIBackend({ timeoutSeconds }), RangeError);
    }
  });
  await t.step("apiKey must be a valid header value, never echoed", () => {
    throws(
      () => new OpenAIBackend({ apiKey: "sk-line\nbreak" }),
      (error: unknown) => {
        ok(error instanceof TypeError);
        ok(error.message.includes("'apiKey'"));
        ok(!error.message.includes("sk-line"));
        return true;
      },
    );
  });
  await t.step("count() needs a positive integer context length", async () => {
    const backend = new OpenAIBackend({ cache: null });
    await rejects(
      backend.count(chat("gpt-4o"), { contextLength: 0 }),
      RangeError,
    );
  });
  await t.step("the default URL is OpenAI's", async () => {
    const { fetch, urls: seen } = kit.urlRecorder({ input_tokens: 3 });
    const backend = new OpenAIBackend({
      cache: null,
      fetch,
    });
    await backend.count({ input: "x" }, RESPONSES);
    deepStrictEqual(seen, ["https://api.openai.com/v1/responses/input_tokens"]);
  });
});

Deno.test("openAIFromConfig() sends the OpenAI key, and only it, to the configured URL", async () => {
  await using server = await serveFakeOpenAI({ apiKey: "sk-openai" });
  const config = loadConfig({
    INCONTEXT_BACKEND: "openai",
    INCONTEXT_TOKENIZER_URL: server.url,
    INCONTEXT_TOKENIZER_API_KEY: "sk-self-hosted",
    INCONTEXT_ANTHROPIC_API_KEY: "sk-ant",
    INCONTEXT_OPENAI_API_KEY: "sk-openai",
  }, { registry: { requirements: () => [] } });
  const backend = openAIFromConfig(config);
  strictEqual(backend.source, "openai-input-tokens");
  await backend.clearCache();
  const counted = await backend.count(
    { model: "gpt-5", input: `hello ${crypto.randomUUID()}` },
    RESPONSES,
  );
  strictEqual(typeof counted === "object" && counted.estimatedTokens, 0);
  strictEqual(server.requests.length, 1);
  strictEqual(server.requests[0]?.headers["authorization"], "Bearer sk-openai");
});

Deno.test("OpenAIBackend.count() keeps the key and the prompt out of errors and logs", async (t) => {
  const { secret, prompt } = kit.canary();
  await using logs = await captureLogs();
  await using server = await serveFakeOpenAI({ apiKey: secret });
  const responses = { model: "gpt-5", input: `Say ${prompt}` };
  const errors: unknown[] = [];
  const fail = async (
    backend: OpenAIBackend,
    request: JsonObject,
    options: typeof RESPONSES | typeof CHAT,
  ) => errors.push(await kit.countError(backend.count(request, options)));

  await t.step("counts succeed with the key", async () => {
    const backend = new OpenAIBackend({
      url: server.url,
      apiKey: secret,
      cache: null,
    });
    await backend.count(responses, RESPONSES);
    await backend.count(
      chat("gpt-4o", { messages: [{ role: "user", content: prompt }] }),
      CHAT,
    );
  });
  for (const fault of ["http-500", "http-429", "non-json"] as const) {
    await t.step(`${fault} echoing the prompt fails cleanly`, async () => {
      server.fault = fault;
      const backend = new OpenAIBackend({
        url: server.url,
        apiKey: secret,
        cache: null,
      });
      await fail(backend, responses, RESPONSES);
    });
  }
  server.fault = "none";
  await t.step("a 401 quoting the key fails cleanly", async () => {
    const backend = new OpenAIBackend({
      url: server.url,
      apiKey: `${secret}x`,
      cache: null,
    });
    await fail(backend, responses, RESPONSES);
  });
  await t.step("a secret in the URL's query string stays out", async () => {
    const backend = new OpenAIBackend({
      url: `${server.url}?key=${secret}`,
      apiKey: secret,
      cache: null,
    });
    server.fault = "http-500";
    await fail(backend, responses, RESPONSES);
    server.fault = "none";
  });
  await t.step("an unreachable host fails cleanly", async () => {
    const backend = new OpenAIBackend({
      url: `http://127.0.0.1:9/?key=${secret}`,
      apiKey: secret,
      cache: null,
    });
    await fail(backend, responses, RESPONSES);
  });
  await t.step(
    "a chat request that cannot be estimated fails cleanly",
    async () => {
      const backend = new OpenAIBackend({
        url: server.url,
        apiKey: secret,
        cache: null,
      });
      const image = {
        type: "image_url",
        image_url: { url: `data:,${prompt}` },
      };
      await fail(
        backend,
        {
          model: "gpt-4o",
          messages: [{ role: "user", content: [image, prompt] }],
        },
        CHAT,
      );
    },
  );
  await kit.leakFreeSteps(t, errors, 7, logs, [secret, prompt, "127.0.0.1"]);
  await t.step("the key went only to the count endpoint", () => {
    ok(server.requests.some((r) => r.text.includes(prompt)));
    for (const request of server.requests) {
      strictEqual(request.path, "/v1/responses/input_tokens");
    }
    // Chat requests are estimated locally: none of them reached the server.
    ok(server.requests.every((r) => !r.text.includes('"messages"')));
  });
});

Deno.test("conformance: OpenAIBackend, Responses requests against the protocol server", async (t) => {
  await using server = await serveFakeOpenAI({ apiKey: "sk-conformance" });
  await using failing = await serveFakeOpenAI({ fault: "http-500" });
  const request = {
    model: "gpt-5",
    instructions: "You are a terse assistant.",
    input: [{ role: "user", content: `Say hello. ${CONFORMANCE_MARKER}` }],
  };
  await kit.runConformance(t, {
    create: () =>
      new OpenAIBackend({
        url: server.url,
        apiKey: "sk-conformance",
        cache: null,
      }),
    createFailing: () => new OpenAIBackend({ url: failing.url, cache: null }),
    contextLength: CONTEXT,
    kind: "responses",
    request,
    grow: kit.growWith("input", (text) => [
      { role: "assistant", content: "Hello." },
      { role: "user", content: text },
    ]),
  });
});

Deno.test("conformance: OpenAIBackend, Chat Completions estimates", async (t) => {
  const local =
    "the Chat Completions count is a local estimate: no server can fail it";
  await kit.runConformance(t, {
    create: () => new OpenAIBackend({ cache: null }),
    createFailing: () => new OpenAIBackend({ cache: null }),
    contextLength: CONTEXT,
    request: {
      model: "gpt-4o",
      messages: [
        { role: "system", content: "You are a terse assistant." },
        { role: "user", content: `Say hello. ${CONFORMANCE_MARKER}` },
      ],
    },
    skip: {
      "fails the count with a CountError when the server fails": local,
      "never quotes the request in a count error": local,
      "lets budget() fall back when the server fails": local,
    },
  });
});
