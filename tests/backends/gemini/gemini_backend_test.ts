import { deepStrictEqual, ok, strictEqual, throws } from "node:assert/strict";
import type { JsonObject } from "../../../src/core/backend.ts";
import { budget } from "../../../src/core/budget.ts";
import { loadConfig } from "../../../src/config/mod.ts";
import { createCountCache } from "../../../src/cache/mod.ts";
import {
  createFakeGeminiHandler,
  type FakeGemini,
  type FakeGeminiFault,
  serveFakeGemini,
} from "../../../src/testing/fake_gemini_server.ts";
import {
  GEMINI_DEFAULT_URL,
  GeminiBackend,
  type GeminiBackendOptions,
  geminiFromConfig,
} from "../../../src/backends/gemini/mod.ts";
import * as kit from "../../_kit/backend_kit.ts";

const CONTEXT = 1_048_576;
const OPTIONS = { contextLength: CONTEXT };
const KEY = "AIza-test-key";
const MODEL = "gemini-2.5-flash";
const PATH = `/v1beta/models/${MODEL}:countTokens`;
const HELLO: JsonObject = {
  contents: [{ role: "user", parts: [{ text: "Hello" }] }],
};
const CHAT: JsonObject = {
  model: MODEL,
  messages: [{ role: "user", content: "Hello" }],
};

function backendFor(
  server: FakeGemini,
  options: Partial<GeminiBackendOptions> = {},
): GeminiBackend {
  return new GeminiBackend({
    url: server.url,
    apiKey: KEY,
    model: MODEL,
    cache: null,
    ...options,
  });
}

Deno.test("GeminiBackend.count() speaks countTokens", async (t) => {
  await using server = await serveFakeGemini({ apiKey: KEY });

  await t.step(
    "posts a generateContentRequest with the key header",
    async () => {
      server.requests.length = 0;
      const counted = await backendFor(server).count(HELLO, OPTIONS);
      strictEqual(server.requests.length, 1);
      const [sent] = server.requests;
      kit.assertEverySent(server.requests, {
        method: "POST",
        path: PATH,
        search: "",
        headers: {
          "x-goog-api-key": KEY,
          "content-type": "application/json",
          authorization: undefined,
        },
      });
      strictEqual(
        sent?.text,
        '{"generateContentRequest":{"model":"models/gemini-2.5-flash","contents":[{"role":"user","parts":[{"text":"Hello"}]}]}}',
      );
      // The fake's rule: ceil(("user" + "\n" + "Hello").length / 4) + 3 per turn.
      strictEqual(counted, Math.ceil("user\nHello".length / 4) + 3);
    },
  );

  await t.step("system instructions and tools count", async () => {
    const bare = await backendFor(server).count(HELLO, OPTIONS);
    const full = await backendFor(server).count({
      ...HELLO,
      systemInstruction: { parts: [{ text: "Be brief." }] },
      tools: [{ functionDeclarations: [{ name: "now", description: "Time" }] }],
      generationConfig: { maxOutputTokens: 100, temperature: 0 },
    }, OPTIONS);
    ok(full > bare, `${full} is not above ${bare}`);
    const body = server.requests.at(-1)?.body as {
      generateContentRequest: JsonObject;
    };
    deepStrictEqual(Object.keys(body.generateContentRequest), [
      "model",
      "contents",
      "systemInstruction",
      "tools",
      "generationConfig",
    ]);
    deepStrictEqual(body.generateContentRequest.generationConfig, {
      temperature: 0,
    });
  });

  await t.step(
    "an OpenAI agent turn converts to a body the API accepts",
    async () => {
      server.requests.length = 0;
      const request = {
        model: `models/${MODEL}`,
        messages: [
          ...kit.AGENT_TURN,
          { role: "user", content: "Tomorrow?" },
        ],
        tools: [kit.WEATHER_TOOL],
        tool_choice: "required",
      };
      ok(await backendFor(server).count(request, OPTIONS) > 0);
      strictEqual(server.requests[0]?.path, PATH);
    },
  );

  await t.step("the request's model wins over the configured one", async () => {
    server.requests.length = 0;
    await backendFor(server).count(
      { ...CHAT, model: "gemini-2.5-pro" },
      OPTIONS,
    );
    strictEqual(
      server.requests[0]?.path,
      "/v1beta/models/gemini-2.5-pro:countTokens",
    );
  });

  await t.step("Responses requests are converted through chat", async () => {
    server.requests.length = 0;
    await backendFor(server).count(
      { model: MODEL, instructions: "Be brief.", input: "Hi" },
      { ...OPTIONS, kind: "responses" },
    );
    deepStrictEqual(server.requests[0]?.body, {
      generateContentRequest: {
        model: `models/${MODEL}`,
        contents: [{ role: "user", parts: [{ text: "Hi" }] }],
        systemInstruction: { parts: [{ text: "Be brief." }] },
      },
    });
  });

  await t.step("requests with no Gemini form fail without a call", async () => {
    server.requests.length = 0;
    const backend = backendFor(server);
    for (const model of ["../admin", "a/b", "tunedModels/x", ""]) {
      await kit.countError(backend.count({ ...CHAT, model }, OPTIONS));
    }
    await kit.countError(
      new GeminiBackend({ url: server.url, apiKey: KEY, cache: null }).count(
        HELLO,
        OPTIONS,
      ),
    );
    await kit.countError(
      backend.count({ prompt: "Once" }, { ...OPTIONS, kind: "completion" }),
    );
    strictEqual(server.requests.length, 0);
  });

  await t.step(
    "odd model names are percent-encoded into one segment",
    async () => {
      const { fetch, urls } = kit.urlRecorder({ totalTokens: 1 });
      const backend = new GeminiBackend({
        cache: null,
        fetch,
      });
      await backend.count({ ...CHAT, model: "my model?x=1#y" }, OPTIONS);
      deepStrictEqual(urls, [
        `${GEMINI_DEFAULT_URL}/v1beta/models/my%20model%3Fx%3D1%23y:countTokens`,
      ]);
    },
  );
});

Deno.test("the fake Gemini API rejects what the real one rejects", async (t) => {
  const fake = createFakeGeminiHandler({ apiKey: KEY });
  const post = async (
    body: unknown,
    options: { path?: string; headers?: Record<string, string> } = {},
  ): Promise<[number, JsonObject]> => {
    const response = await fake.fetch(
      `http://fake.test${options.path ?? PATH}`,
      {
        method: "POST",
        headers: options.headers ?? { "x-goog-api-key": KEY },
        body: JSON.stringify(body),
      },
    );
    return [response.status, await response.json()];
  };
  const inner = (extra: JsonObject) => ({
    generateContentRequest: { model: `models/${MODEL}`, ...HELLO, ...extra },
  });
  const user = { role: "user", parts: [{ text: "Hi" }] };
  const table: [string, unknown, number, string][] = [
    [
      "an unknown top-level field",
      { ...HELLO, temperature: 0 },
      400,
      "INVALID_ARGUMENT",
    ],
    [
      "an unknown request field",
      inner({ maxOutputTokens: 5 }),
      400,
      "INVALID_ARGUMENT",
    ],
    [
      "non-alternating roles",
      inner({ contents: [user, user] }),
      400,
      "INVALID_ARGUMENT",
    ],
    [
      "a system role",
      inner({ contents: [{ role: "system", parts: [{ text: "x" }] }] }),
      400,
      "INVALID_ARGUMENT",
    ],
    [
      "empty parts",
      inner({ contents: [{ role: "user", parts: [] }] }),
      400,
      "INVALID_ARGUMENT",
    ],
    [
      "a part with two kinds of data",
      inner({
        contents: [{
          role: "user",
          parts: [{ text: "a", functionCall: { name: "f" } }],
        }],
      }),
      400,
      "INVALID_ARGUMENT",
    ],
    [
      "a model outside models/",
      { generateContentRequest: { model: MODEL, ...HELLO } },
      400,
      "INVALID_ARGUMENT",
    ],
    [
      "both contents and generateContentRequest",
      { ...HELLO, ...inner({}) },
      400,
      "INVALID_ARGUMENT",
    ],
    [
      "both parameters and parametersJsonSchema",
      inner({
        tools: [{
          functionDeclarations: [{
            name: "f",
            parameters: {},
            parametersJsonSchema: {},
          }],
        }],
      }),
      400,
      "INVALID_ARGUMENT",
    ],
  ];
  for (const [name, body, status, code] of table) {
    await t.step(name, async () => {
      const [got, answer] = await post(body);
      strictEqual(got, status);
      const error = answer.error as JsonObject;
      strictEqual(error.code, status);
      strictEqual(error.status, code);
      strictEqual(typeof error.message, "string");
    });
  }
  await t.step("a missing key is 403, a wrong one 400", async () => {
    strictEqual((await post(HELLO, { headers: {} }))[0], 403);
    strictEqual(
      (await post(HELLO, { headers: { "x-goog-api-key": "wrong" } }))[0],
      400,
    );
    strictEqual(
      (await post(HELLO, { path: `${PATH}?key=${KEY}`, headers: {} }))[0],
      200,
    );
  });
  await t.step("an unknown path is 404", async () => {
    strictEqual(
      (await post(HELLO, { path: "/v1beta/models/a/b:countTokens" }))[0],
      404,
    );
  });
  await t.step("an unknown fault throws", () => {
    throws(
      () => createFakeGeminiHandler({ fault: "nope" as FakeGeminiFault }),
      RangeError,
    );
  });
  await t.step("a valid request answers totalTokens", async () => {
    const [status, answer] = await post(inner({}));
    strictEqual(status, 200);
    strictEqual(typeof answer.totalTokens, "number");
  });
});

Deno.test("GeminiBackend.count() fails on a count that is not one, without retrying", async () => {
  await using server = await serveFakeGemini({ fault: "invalid-count" });
  const error = await kit.countError(backendFor(server).count(HELLO, OPTIONS));
  ok(error.message.includes("invalid totalTokens"), error.message);
  strictEqual(server.requests.length, 1);
});

Deno.test("GeminiBackend.count() goes through the count cache", async () => {
  const fake = createFakeGeminiHandler();
  await using cache = createCountCache({ inProcess: true });
  const backend = new GeminiBackend({ model: MODEL, fetch: fake.fetch, cache });
  const first = await backend.count(HELLO, OPTIONS);
  strictEqual(await backend.count(structuredClone(HELLO), OPTIONS), first);
  strictEqual(fake.requests.length, 1);
  // The output cap does not count, so a new cap reuses the count.
  await backend.count(
    { ...HELLO, generationConfig: { maxOutputTokens: 9 } },
    OPTIONS,
  );
  strictEqual(fake.requests.length, 1);
  // Another model is another endpoint.
  await backend.count({ ...HELLO, model: "gemini-2.5-pro" }, OPTIONS);
  strictEqual(fake.requests.length, 2);
});

Deno.test("GeminiBackend budgets each shape with its own cap field", async (t) => {
  const fake = createFakeGeminiHandler({ countTokens: () => 1000 });
  const backend = new GeminiBackend({
    model: MODEL,
    fetch: fake.fetch,
    cache: null,
  });
  const settings = { window: 100_000, contextLength: CONTEXT, backend };

  await t.step(
    "a Gemini request gets generationConfig.maxOutputTokens",
    async () => {
      const request = {
        ...HELLO,
        generationConfig: { temperature: 0, maxOutputTokens: 65536 },
      };
      const result = await budget(request, settings);
      strictEqual(result.action, "set");
      strictEqual(result.field, "generationConfig.maxOutputTokens");
      strictEqual(result.maxTokens, 65536);
      deepStrictEqual(result.request, {
        ...HELLO,
        generationConfig: { temperature: 0, maxOutputTokens: 65536 },
      });
      const tight = await budget({
        ...HELLO,
        generationConfig: { maxOutputTokens: 200_000 },
      }, settings);
      deepStrictEqual(tight.request.generationConfig, {
        maxOutputTokens: 99_000,
      });
      deepStrictEqual(request.generationConfig, {
        temperature: 0,
        maxOutputTokens: 65536,
      });
    },
  );

  await t.step("a snake_cased request keeps its spelling", async () => {
    const request = { ...HELLO, generation_config: { max_output_tokens: 500 } };
    const result = await budget(request, settings);
    strictEqual(result.field, "generation_config.max_output_tokens");
    deepStrictEqual(result.request.generation_config, {
      max_output_tokens: 500,
    });
  });

  await t.step("an OpenAI request keeps the OpenAI fields", async () => {
    const result = await budget(
      { ...CHAT, max_completion_tokens: 200_000 },
      settings,
    );
    strictEqual(result.field, "max_completion_tokens");
    strictEqual(result.request.max_completion_tokens, 99_000);
    strictEqual(result.request.generationConfig, undefined);
  });

  await t.step(
    "a failing count falls back to an estimate of the contents",
    async () => {
      const request = {
        contents: [{ role: "user", parts: [{ text: "x".repeat(400) }] }],
      };
      const result = await kit.budgetUnderFault(
        fake,
        "http-503",
        request,
        settings,
      );
      strictEqual(result.promptTokens, 100);
      deepStrictEqual(result.request.generationConfig, {
        maxOutputTokens: 100_000 - 100 - 1024,
      });
    },
  );
});

Deno.test("GeminiBackend sends its key in x-goog-api-key, never in the URL", async () => {
  await using server = await serveFakeGemini({ apiKey: KEY });
  await backendFor(server).count(HELLO, OPTIONS);
  for (const request of server.requests) {
    strictEqual(request.path, PATH);
    strictEqual(request.headers["x-goog-api-key"], KEY);
    ok(!request.search.includes(KEY));
  }
});

Deno.test("new GeminiBackend() keeps a base path and a query string", async (t) => {
  await t.step("a base path and query string are kept", async () => {
    const { fetch, urls } = kit.urlRecorder({ totalTokens: 3 });
    const backend = new GeminiBackend({
      url: "http://gateway.test/google?tenant=a",
      model: MODEL,
      cache: null,
      fetch,
    });
    strictEqual(await backend.count(HELLO, OPTIONS), 3);
    deepStrictEqual(urls, [`http://gateway.test/google${PATH}?tenant=a`]);
  });
});

Deno.test("geminiFromConfig() builds the backend from configuration", async (t) => {
  const env = { INCONTEXT_BACKEND: "gemini" };
  await t.step("requires INCONTEXT_GEMINI_API_KEY", () => {
    kit.assertRequires(
      () => geminiFromConfig(loadConfig(env)),
      "INCONTEXT_GEMINI_API_KEY",
    );
  });
  await t.step("uses the URL, key and model", async () => {
    await using server = await serveFakeGemini({ apiKey: KEY });
    const backend = geminiFromConfig(loadConfig({
      ...env,
      INCONTEXT_GEMINI_API_KEY: KEY,
      INCONTEXT_TOKENIZER_URL: server.url,
      INCONTEXT_COUNT_MODEL: MODEL,
    }));
    await backend.clearCache();
    ok(Number(await backend.count(HELLO, OPTIONS)) > 0);
    strictEqual(server.requests[0]?.path, PATH);
    await backend.clearCache();
  });
});

Deno.test("conformance: gemini against the Gemini protocol server", async (t) => {
  await using server = await serveFakeGemini({ apiKey: KEY });
  await using failing = await serveFakeGemini({ fault: "http-503" });
  const base = {
    create: () => backendFor(server),
    createFailing: () => backendFor(failing),
    contextLength: CONTEXT,
  };
  const run = (t: Deno.TestContext, extra = {}) =>
    kit.runConformance(t, base, extra);
  await t.step("OpenAI-shaped requests", (t) => run(t));
  await t.step("Gemini-shaped requests", (t) =>
    run(t, {
      request: {
        systemInstruction: { parts: [{ text: "You are terse." }] },
        contents: [{
          role: "user",
          parts: [{ text: "Hi conformance-marker-7d1f0c" }],
        }],
        generationConfig: { temperature: 0 },
      },
      grow: kit.growWith("contents", (text) => [
        { role: "model", parts: [{ text: "Hello." }] },
        { role: "user", parts: [{ text }] },
      ]),
    }));
});
