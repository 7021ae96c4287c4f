// Covers: src/backends/openai/openai_backend.ts, src/backends/openai/chat_estimate.ts
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
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
import { GPT_TOKENIZER } from "../../../src/backends/openai/chat_estimate.ts";
import * as kit from "../../_kit/backend_kit.ts";
import cookbook from "../../fixtures/openai_cookbook.json" with {
  type: "json",
};
import { captureLogs } from "../../_kit/log_capture.ts";

const CONTEXT = 128000;
const RESPONSES = { contextLength: CONTEXT, kind: "responses" } as const;
const CHAT = { contextLength: CONTEXT, kind: "chat" } as const;

/**
 * The samples of OpenAI's cookbook "How to count tokens with tiktoken": its
 * conversation, and its tool example (section 7) with the messages sent
 * with it. The Node proof counts the conversation too.
 */
const {
  messages: COOKBOOK_MESSAGES,
  tools: COOKBOOK_TOOLS,
  toolMessages: COOKBOOK_TOOL_MESSAGES,
} = cookbook;

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

Deno.test("OpenAIBackend.count() caches a chat estimate as an estimate", async (t) => {
  await t.step("a chat estimate is cached and stays an estimate", async () => {
    await using cache = createCountCache({ inProcess: true });
    const backend = new OpenAIBackend({ cache });
    const first = await backend.count(chat("gpt-4o"), CHAT);
    strictEqual((await cache.stats()).entries, 1);
    deepStrictEqual(await backend.count(chat("gpt-4o"), CHAT), first);
    strictEqual(first.source, "openai-o200k-estimate");
  });
});

Deno.test("new OpenAIBackend() counts with OpenAI's URL by default", async (t) => {
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

Deno.test("OpenAIBackend.count() estimates chat requests without the server, never quoting the prompt", async () => {
  const { prompt } = kit.canary();
  await using logs = await captureLogs();
  await using server = await serveFakeOpenAI();
  const backend = new OpenAIBackend({ url: server.url, cache: null });
  await backend.count(
    chat("gpt-4o", { messages: [{ role: "user", content: prompt }] }),
    CHAT,
  );
  const image = { type: "image_url", image_url: { url: `data:,${prompt}` } };
  const error = await kit.countError(
    backend.count({
      model: "gpt-4o",
      messages: [{ role: "user", content: [image, prompt] }],
    }, CHAT),
  );
  ok(logs.lines.length > 0);
  kit.assertNoLeak([...kit.errorTexts(error), ...logs.lines], [prompt]);
  strictEqual(server.requests.length, 0);
});

/**
 * An import map with every import `tests/deno.json` maps, in which
 * `gpt-tokenizer` resolves to a folder that does not exist: the package is
 * missing, as on a Node install without the optional peer.
 */
async function importMapWithoutEncodings(): Promise<string> {
  const testsConfig = new URL("../../deno.json", import.meta.url);
  const { imports } = JSON.parse(await Deno.readTextFile(testsConfig)) as {
    imports: Record<string, string>;
  };
  const map: Record<string, string> = {};
  for (const [name, target] of Object.entries(imports)) {
    const resolved = target.startsWith(".")
      ? new URL(target, testsConfig).href
      : target;
    map[name] = resolved;
    // deno.json maps a package's subpaths too; an import map file does not.
    if (target.startsWith("npm:")) map[`${name}/`] = `${resolved}/`;
  }
  map["gpt-tokenizer"] = "file:///nonexistent/gpt-tokenizer/mod.js";
  map["gpt-tokenizer/"] = "file:///nonexistent/gpt-tokenizer/";
  const path = await Deno.makeTempFile({ suffix: ".json" });
  await Deno.writeTextFile(path, JSON.stringify({ imports: map }));
  return path;
}

Deno.test("OpenAIBackend.count() names gpt-tokenizer and how to install it when the package is missing", async () => {
  const importMap = await importMapWithoutEncodings();
  try {
    const output = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "--no-config",
        `--import-map=${importMap}`,
        "--allow-read",
        "--allow-env",
        new URL("../../fixtures/openai_without_encodings.ts", import.meta.url)
          .pathname,
      ],
      stdout: "piped",
      stderr: "piped",
    }).output();
    const decoder = new TextDecoder();
    strictEqual(output.code, 0, decoder.decode(output.stderr));
    const { errors, warnings } = JSON.parse(decoder.decode(output.stdout));
    const message =
      `Cannot estimate a chat request as the npm package ${GPT_TOKENIZER} cannot be loaded: install it beside @incontext/incontext (npm install ${GPT_TOKENIZER})`;
    // Each count says it, and the next count tries the import again.
    deepStrictEqual(errors, [
      { name: "CountError", message },
      { name: "CountError", message },
    ]);
    // The operator is told once, with the package to install.
    deepStrictEqual(warnings, [
      { package: GPT_TOKENIZER, errorType: "TypeError" },
    ]);
  } finally {
    await Deno.remove(importMap);
  }
});

Deno.test("GPT_TOKENIZER names the version deno.json pins", async () => {
  const manifest = JSON.parse(
    await Deno.readTextFile(new URL("../../../deno.json", import.meta.url)),
  );
  strictEqual(`npm:${GPT_TOKENIZER}`, manifest.imports["gpt-tokenizer"]);
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
