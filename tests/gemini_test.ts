import {
  deepStrictEqual,
  ok,
  rejects,
  strictEqual,
  throws,
} from "node:assert/strict";
import type { JsonObject } from "../src/backend.ts";
import { backendConformanceCases } from "../src/backend_conformance.ts";
import { budget } from "../src/budget.ts";
import { loadConfig } from "../src/config.ts";
import { ConfigError } from "../src/config_error.ts";
import { createCountCache } from "../src/count_cache.ts";
import { CountError } from "../src/errors.ts";
import {
  createFakeGeminiHandler,
  type FakeGemini,
  type FakeGeminiFault,
  serveFakeGemini,
} from "../src/fake_gemini_server.ts";
import {
  GEMINI_DEFAULT_URL,
  GeminiBackend,
  type GeminiBackendOptions,
  geminiFromConfig,
} from "../src/gemini.ts";
import { captureLogs } from "./_log_capture.ts";

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

async function countError(promise: Promise<unknown>): Promise<CountError> {
  let caught: unknown;
  await rejects(promise, (error: unknown) => {
    caught = error;
    return error instanceof CountError;
  });
  return caught as CountError;
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
      strictEqual(sent?.method, "POST");
      strictEqual(sent?.path, PATH);
      strictEqual(sent?.search, "");
      strictEqual(sent?.headers["x-goog-api-key"], KEY);
      strictEqual(sent?.headers["content-type"], "application/json");
      strictEqual(sent?.headers.authorization, undefined);
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
          { role: "system", content: "Be brief." },
          { role: "user", content: "Weather?" },
          {
            role: "assistant",
            content: null,
            tool_calls: [{
              id: "call_1",
              type: "function",
              function: { name: "weather", arguments: '{"city":"Paris"}' },
            }],
          },
          { role: "tool", tool_call_id: "call_1", content: "Sunny" },
          { role: "user", content: "Tomorrow?" },
        ],
        tools: [{
          type: "function",
          function: { name: "weather", parameters: { type: "object" } },
        }],
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
      await countError(backend.count({ ...CHAT, model }, OPTIONS));
    }
    await countError(
      new GeminiBackend({ url: server.url, apiKey: KEY, cache: null }).count(
        HELLO,
        OPTIONS,
      ),
    );
    await countError(
      backend.count({ prompt: "Once" }, { ...OPTIONS, kind: "completion" }),
    );
    strictEqual(server.requests.length, 0);
  });

  await t.step(
    "odd model names are percent-encoded into one segment",
    async () => {
      const urls: string[] = [];
      const backend = new GeminiBackend({
        cache: null,
        fetch: (input) => {
          urls.push(String(input));
          return Promise.resolve(Response.json({ totalTokens: 1 }));
        },
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

Deno.test("GeminiBackend.count() fails every fault with a CountError, without retrying", async (t) => {
  await using server = await serveFakeGemini();
  const faults: [FakeGeminiFault, string][] = [
    ["http-400", "HTTP 400"],
    ["http-403", "HTTP 403"],
    ["http-429", "HTTP 429"],
    ["http-500", "HTTP 500"],
    ["http-503", "HTTP 503"],
    ["non-json", "non-JSON"],
    ["invalid-count", "invalid totalTokens"],
    ["non-object", "non-object"],
    ["truncated-json", "non-JSON"],
    ["reset", "request failed"],
    ["oversized", "more than 65536 bytes"],
  ];
  for (const [fault, phrase] of faults) {
    await t.step(fault, async () => {
      server.fault = fault;
      server.requests.length = 0;
      const error = await countError(backendFor(server).count(HELLO, OPTIONS));
      ok(error.message.includes(phrase), error.message);
      strictEqual(server.requests.length, 1);
    });
  }
  await t.step("refused", async () => {
    server.fault = "refused";
    const error = await countError(backendFor(server).count(HELLO, OPTIONS));
    ok(error.message.includes("request failed"), error.message);
  });
  await t.step("slow: the timeout ends the count", async () => {
    server.fault = "slow";
    const error = await countError(
      backendFor(server, { timeoutSeconds: 0.05 }).count(HELLO, OPTIONS),
    );
    ok(error.message.includes("did not answer within"), error.message);
  });
  server.fault = "none";
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
      fake.fault = "http-503";
      const request = {
        contents: [{ role: "user", parts: [{ text: "x".repeat(400) }] }],
      };
      const result = await budget(request, settings);
      fake.fault = "none";
      strictEqual(result.source, "rough-fallback");
      strictEqual(result.promptTokens, 100);
      deepStrictEqual(result.request.generationConfig, {
        maxOutputTokens: 100_000 - 100 - 1024,
      });
    },
  );
});

Deno.test("GeminiBackend never leaks its key or the prompt", async (t) => {
  const secret = `sk-canary-${crypto.randomUUID()}`;
  const prompt = `prompt-canary-${crypto.randomUUID()}`;
  const request = { contents: [{ role: "user", parts: [{ text: prompt }] }] };
  await using logs = await captureLogs();
  await using server = await serveFakeGemini({ apiKey: secret });
  const texts: string[] = [];
  const collect = (error: unknown) => {
    for (let e = error, depth = 0; e instanceof Error && depth < 10; depth++) {
      texts.push(e.message, e.name, e.stack ?? "");
      e = e.cause;
    }
  };
  const sent: { url: string; headers: Headers }[] = [];
  const spy: typeof fetch = (input, init) => {
    sent.push({ url: String(input), headers: new Headers(init?.headers) });
    return fetch(input, init);
  };
  const make = (url: string) =>
    new GeminiBackend({
      url,
      apiKey: secret,
      model: MODEL,
      cache: null,
      fetch: spy,
    });

  await t.step("a successful count", async () => {
    ok(await make(server.url).count(request, OPTIONS) > 0);
  });
  await t.step("a 500 whose body echoes the key and prompt", async () => {
    server.fault = "http-500";
    collect(await countError(make(server.url).count(request, OPTIONS)));
    const result = await budget(request, {
      window: 100_000,
      contextLength: CONTEXT,
      backend: make(server.url),
    });
    strictEqual(result.source, "rough-fallback");
  });
  await t.step("an unreachable host", async () => {
    server.fault = "refused";
    collect(await countError(make(server.url).count(request, OPTIONS)));
  });
  await t.step("a URL whose query holds the secret", async () => {
    server.fault = "http-500";
    collect(
      await countError(
        make(`${server.url}/?key=${secret}`).count(request, OPTIONS),
      ),
    );
    server.fault = "none";
  });
  await t.step("neither appears in errors or logs", () => {
    ok(texts.length > 0 && logs.lines.length > 0);
    for (const text of [...texts, ...logs.lines]) {
      ok(!text.includes(secret), `the key leaked: ${text}`);
      ok(!text.includes(prompt), `the prompt leaked: ${text}`);
    }
  });
  await t.step(
    "the key goes only in x-goog-api-key, only to countTokens",
    () => {
      ok(sent.length >= 4);
      for (const { url, headers } of sent) {
        strictEqual(new URL(url).pathname, PATH);
        strictEqual(headers.get("x-goog-api-key"), secret);
        for (const [name, value] of headers) {
          if (name !== "x-goog-api-key") ok(!value.includes(secret), name);
        }
      }
      // The backend never puts the key in the URL itself (only the caller's query did).
      ok(!new URL(sent[0]!.url).search.includes(secret));
      for (const recorded of server.requests) {
        ok(
          !recorded.text.includes(secret),
        );
      }
    },
  );
});

Deno.test("new GeminiBackend() validates its options", async (t) => {
  await t.step("bad options throw, never echoing the key", () => {
    throws(() => new GeminiBackend({ url: "http://user:pw@x" }), TypeError);
    throws(() => new GeminiBackend({ timeoutSeconds: Number.NaN }), RangeError);
    throws(
      () => new GeminiBackend({ apiKey: "AIza-secret\r\n" }),
      (error: unknown) =>
        error instanceof TypeError && error.message.includes("'apiKey'") &&
        !error.message.includes("AIza-secret"),
    );
  });
  await t.step("a base path and query string are kept", async () => {
    const urls: string[] = [];
    const backend = new GeminiBackend({
      url: "http://gateway.test/google?tenant=a",
      model: MODEL,
      cache: null,
      fetch: (input) => {
        urls.push(String(input));
        return Promise.resolve(Response.json({ totalTokens: 3 }));
      },
    });
    strictEqual(await backend.count(HELLO, OPTIONS), 3);
    deepStrictEqual(urls, [`http://gateway.test/google${PATH}?tenant=a`]);
  });
  await t.step("count() rejects a bad context length", async () => {
    await rejects(
      new GeminiBackend({ cache: null }).count(HELLO, { contextLength: 1.5 }),
      RangeError,
    );
  });
});

Deno.test("geminiFromConfig() builds the backend from configuration", async (t) => {
  const env = { INCONTEXT_BACKEND: "gemini" };
  await t.step("requires INCONTEXT_GEMINI_API_KEY", () => {
    throws(
      () => geminiFromConfig(loadConfig(env)),
      (error: unknown) =>
        error instanceof ConfigError &&
        error.issues.some((i) => i.variable === "INCONTEXT_GEMINI_API_KEY"),
    );
  });
  await t.step("uses the URL, key and model", async () => {
    await using server = await serveFakeGemini({ apiKey: KEY });
    const backend = geminiFromConfig(loadConfig({
      ...env,
      INCONTEXT_GEMINI_API_KEY: KEY,
      INCONTEXT_TOKENIZER_URL: server.url,
      INCONTEXT_MODEL: MODEL,
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
  const run = async (t: Deno.TestContext, extra: object) => {
    const cases = backendConformanceCases({
      create: () => backendFor(server),
      createFailing: () => backendFor(failing),
      contextLength: CONTEXT,
      ...extra,
    });
    for (const c of cases) {
      await t.step({ name: c.name, ignore: c.skip !== undefined, fn: c.run });
    }
  };
  await t.step("OpenAI-shaped requests", (t) => run(t, {}));
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
      grow: (request: JsonObject, text: string) => ({
        ...request,
        contents: [
          ...(request.contents as unknown[]),
          { role: "model", parts: [{ text: "Hello." }] },
          { role: "user", parts: [{ text }] },
        ],
      }),
    }));
});
