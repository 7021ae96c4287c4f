import {
  deepStrictEqual,
  ok,
  rejects,
  strictEqual,
  throws,
} from "node:assert/strict";
import {
  ANTHROPIC_DEFAULT_URL,
  AnthropicBackend,
  type AnthropicBackendOptions,
  anthropicFromConfig,
} from "../src/anthropic.ts";
import type { JsonObject } from "../src/backend.ts";
import { backendConformanceCases } from "../src/backend_conformance.ts";
import { budget } from "../src/budget.ts";
import { loadConfig } from "../src/config.ts";
import { ConfigError } from "../src/config_error.ts";
import { createCountCache } from "../src/count_cache.ts";
import { CountError } from "../src/errors.ts";
import {
  createFakeAnthropicHandler,
  type FakeAnthropic,
  type FakeAnthropicFault,
  serveFakeAnthropic,
} from "../src/fake_anthropic_server.ts";
import { captureLogs } from "./_log_capture.ts";

const CONTEXT = 200_000;
const OPTIONS = { contextLength: CONTEXT };
const KEY = "sk-ant-test-key";
const MODEL = "claude-sonnet-4-5";
const HELLO: JsonObject = {
  model: MODEL,
  messages: [{ role: "user", content: "Hello" }],
};

function backendFor(
  server: FakeAnthropic,
  options: Partial<AnthropicBackendOptions> = {},
): AnthropicBackend {
  return new AnthropicBackend({
    url: server.url,
    apiKey: KEY,
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

Deno.test("AnthropicBackend.count() speaks count_tokens", async (t) => {
  await using server = await serveFakeAnthropic({ apiKey: KEY });

  await t.step("posts the body with the key and version headers", async () => {
    server.requests.length = 0;
    const counted = await backendFor(server).count(HELLO, OPTIONS);
    strictEqual(server.requests.length, 1);
    const [sent] = server.requests;
    strictEqual(sent?.method, "POST");
    strictEqual(sent?.path, "/v1/messages/count_tokens");
    strictEqual(sent?.headers["x-api-key"], KEY);
    strictEqual(sent?.headers["anthropic-version"], "2023-06-01");
    strictEqual(sent?.headers["content-type"], "application/json");
    ok(sent?.headers["user-agent"]?.startsWith("incontext/"));
    strictEqual(sent?.headers.authorization, undefined);
    strictEqual(
      sent?.text,
      '{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":"Hello"}]}',
    );
    // The fake's rule: ceil(("user" + "\n" + "Hello").length / 4) + 4 per message.
    strictEqual(counted, Math.ceil("user\nHello".length / 4) + 4);
  });

  await t.step("a longer prompt counts more", async () => {
    const longer = {
      model: MODEL,
      messages: [{ role: "user", content: "Hello ".repeat(100) }],
    };
    ok(
      await backendFor(server).count(longer, OPTIONS) >
        await backendFor(server).count(HELLO, OPTIONS),
    );
  });

  await t.step("a converted agent turn is one the API accepts", async () => {
    server.requests.length = 0;
    const request = {
      model: MODEL,
      max_completion_tokens: 9000,
      temperature: 0.2,
      stream: true,
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
        { role: "user", content: "And tomorrow?" },
        { role: "user", content: "Briefly." },
      ],
      tools: [{
        type: "function",
        function: { name: "weather", parameters: { type: "object" } },
      }],
      tool_choice: "auto",
    };
    ok(await backendFor(server).count(request, OPTIONS) > 0);
    const body = server.requests[0]?.body as JsonObject;
    deepStrictEqual(Object.keys(body), [
      "model",
      "messages",
      "system",
      "tools",
    ]);
  });

  await t.step("a Messages-shaped request is sent as it is", async () => {
    server.requests.length = 0;
    const request = {
      model: MODEL,
      max_tokens: 1024,
      system: "Be brief.",
      messages: [{ role: "user", content: [{ type: "text", text: "Hi" }] }],
      thinking: { type: "enabled", budget_tokens: 2048 },
    };
    await backendFor(server).count(request, OPTIONS);
    deepStrictEqual(server.requests[0]?.body, {
      model: MODEL,
      messages: request.messages,
      system: [{ type: "text", text: "Be brief." }],
      thinking: request.thinking,
    });
  });

  await t.step(
    "the configured model counts requests that name none",
    async () => {
      server.requests.length = 0;
      const backend = backendFor(server, { model: "claude-haiku-4-5" });
      await backend.count({ messages: HELLO.messages }, OPTIONS);
      strictEqual(
        (server.requests[0]?.body as JsonObject).model,
        "claude-haiku-4-5",
      );
    },
  );

  await t.step("Responses requests are converted through chat", async () => {
    server.requests.length = 0;
    const request = { model: MODEL, instructions: "Be brief.", input: "Hi" };
    await backendFor(server).count(request, { ...OPTIONS, kind: "responses" });
    deepStrictEqual(server.requests[0]?.body, {
      model: MODEL,
      messages: [{ role: "user", content: "Hi" }],
      system: [{ type: "text", text: "Be brief." }],
    });
  });

  await t.step(
    "requests with no Messages form fail without a call",
    async () => {
      server.requests.length = 0;
      const backend = backendFor(server);
      const remote = {
        model: MODEL,
        messages: [{
          role: "user",
          content: [{
            type: "image_url",
            image_url: { url: "https://x.test/a" },
          }],
        }],
      };
      await countError(backend.count(remote, OPTIONS));
      await countError(backend.count({ messages: HELLO.messages }, OPTIONS));
      await countError(
        backend.count({ prompt: "Once" }, { ...OPTIONS, kind: "completion" }),
      );
      strictEqual(server.requests.length, 0);
    },
  );
});

Deno.test("the fake Anthropic API rejects what the real one rejects", async (t) => {
  const fake = createFakeAnthropicHandler({ apiKey: KEY });
  const post = async (
    body: unknown,
    headers: Record<string, string> = {},
  ): Promise<[number, unknown]> => {
    const response = await fake.fetch(
      "http://fake.test/v1/messages/count_tokens",
      {
        method: "POST",
        headers: {
          "x-api-key": KEY,
          "anthropic-version": "2023-06-01",
          ...headers,
        },
        body: JSON.stringify(body),
      },
    );
    return [response.status, await response.json()];
  };
  const user = { role: "user", content: "Hi" };
  const table: [string, unknown, Record<string, string>, number, string][] = [
    [
      "an unknown top-level field",
      { ...HELLO, max_tokens: 5 },
      {},
      400,
      "invalid_request_error",
    ],
    [
      "non-alternating roles",
      { model: MODEL, messages: [user, user] },
      {},
      400,
      "invalid_request_error",
    ],
    [
      "a system role message",
      { model: MODEL, messages: [{ role: "system", content: "x" }] },
      {},
      400,
      "invalid_request_error",
    ],
    [
      "no messages",
      { model: MODEL, messages: [] },
      {},
      400,
      "invalid_request_error",
    ],
    [
      "an empty text block",
      {
        model: MODEL,
        messages: [{ role: "user", content: [{ type: "text", text: "" }] }],
      },
      {},
      400,
      "invalid_request_error",
    ],
    [
      "a tool_use without its tool_result",
      {
        model: MODEL,
        messages: [
          user,
          {
            role: "assistant",
            content: [{ type: "tool_use", id: "t1", name: "f", input: {} }],
          },
          user,
        ],
      },
      {},
      400,
      "invalid_request_error",
    ],
    [
      "a tool without input_schema",
      { ...HELLO, tools: [{ name: "f" }] },
      {},
      400,
      "invalid_request_error",
    ],
    [
      "no anthropic-version",
      HELLO,
      { "anthropic-version": "" },
      400,
      "invalid_request_error",
    ],
    [
      "a wrong key",
      HELLO,
      { "x-api-key": "sk-wrong" },
      401,
      "authentication_error",
    ],
  ];
  for (const [name, body, headers, status, type] of table) {
    await t.step(name, async () => {
      const sent = { ...headers };
      if (sent["anthropic-version"] === "") {
        // An empty header is still a header: build the request without it.
        const response = await fake.fetch(
          "http://fake.test/v1/messages/count_tokens",
          {
            method: "POST",
            headers: { "x-api-key": KEY },
            body: JSON.stringify(body),
          },
        );
        strictEqual(response.status, status);
        strictEqual(((await response.json()) as JsonObject).type, "error");
        return;
      }
      const [got, answer] = await post(body, sent);
      strictEqual(got, status);
      deepStrictEqual((answer as { error: { type: string } }).error.type, type);
      strictEqual((answer as JsonObject).type, "error");
    });
  }
  await t.step("prompt-too-long quotes the count and the limit", async () => {
    const tight = createFakeAnthropicHandler({
      maxInputTokens: 5,
      fault: "prompt-too-long",
      countTokens: () => 9,
    });
    const response = await tight.fetch(
      "http://fake.test/v1/messages/count_tokens",
      {
        method: "POST",
        headers: { "anthropic-version": "2023-06-01" },
        body: JSON.stringify(HELLO),
      },
    );
    strictEqual(response.status, 400);
    deepStrictEqual(await response.json(), {
      type: "error",
      error: {
        type: "invalid_request_error",
        message: "prompt is too long: 9 tokens > 5 maximum",
      },
    });
  });
  await t.step("bad options throw", () => {
    throws(
      () => createFakeAnthropicHandler({ fault: "nope" as FakeAnthropicFault }),
      RangeError,
    );
    throws(() => createFakeAnthropicHandler({ maxInputTokens: 0 }), RangeError);
  });
  await t.step("a valid request answers input_tokens", async () => {
    const [status, answer] = await post(HELLO);
    strictEqual(status, 200);
    deepStrictEqual(Object.keys(answer as JsonObject), ["input_tokens"]);
  });
});

Deno.test("AnthropicBackend.count() fails every fault with a CountError, without retrying", async (t) => {
  await using server = await serveFakeAnthropic();
  const faults: [FakeAnthropicFault, string][] = [
    ["http-401", "HTTP 401"],
    ["http-429", "HTTP 429"],
    ["http-500", "HTTP 500"],
    ["http-529", "HTTP 529"],
    ["prompt-too-long", "HTTP 400"],
    ["non-json", "non-JSON"],
    ["invalid-count", "invalid input_tokens"],
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
  await t.step("slow: the caller's abort ends the count", async () => {
    server.fault = "slow";
    const controller = new AbortController();
    const counting = backendFor(server).count(HELLO, {
      ...OPTIONS,
      signal: controller.signal,
    });
    controller.abort();
    const error = await countError(counting);
    ok(error.message.includes("aborted"), error.message);
  });
  server.fault = "none";
});

Deno.test("AnthropicBackend.count() goes through the count cache", async () => {
  const fake = createFakeAnthropicHandler();
  await using cache = createCountCache({ inProcess: true });
  const backend = new AnthropicBackend({ fetch: fake.fetch, cache });
  const first = await backend.count(HELLO, OPTIONS);
  strictEqual(await backend.count(structuredClone(HELLO), OPTIONS), first);
  strictEqual(fake.requests.length, 1);
  await backend.count(HELLO, { contextLength: CONTEXT - 1 });
  strictEqual(fake.requests.length, 2);
  fake.fault = "http-500";
  const other = { ...HELLO, messages: [{ role: "user", content: "Other" }] };
  await countError(backend.count(other, OPTIONS));
  fake.fault = "none";
  // Failures are never cached.
  ok(await backend.count(other, OPTIONS) > 0);
});

Deno.test("AnthropicBackend budgets with max_tokens only", async (t) => {
  const fake = createFakeAnthropicHandler({ countTokens: () => 1000 });
  const backend = new AnthropicBackend({ fetch: fake.fetch, cache: null });
  const settings = { window: 100_000, contextLength: CONTEXT, backend };

  await t.step(
    "an OpenAI request's aliases become one max_tokens",
    async () => {
      const request = {
        ...HELLO,
        max_completion_tokens: 8000,
        extra_body: { max_output_tokens: 9000 },
      };
      const result = await budget(request, settings);
      strictEqual(result.action, "set");
      strictEqual(result.field, "max_tokens");
      deepStrictEqual(result.request, {
        ...HELLO,
        extra_body: {},
        max_tokens: 8000,
      });
    },
  );

  await t.step("a Messages request without a cap gets one", async () => {
    const request = { ...HELLO, system: "Be brief." };
    const result = await budget(request, settings);
    strictEqual(result.request.max_tokens, 100_000 - 1000);
    strictEqual(result.source, "anthropic-count-tokens");
  });

  await t.step("an oversized cap is cut to the window", async () => {
    const result = await budget({ ...HELLO, max_tokens: 150_000 }, settings);
    strictEqual(result.request.max_tokens, 99_000);
  });

  await t.step("a failing count falls back to the estimate", async () => {
    fake.fault = "http-529";
    const result = await budget(
      { ...HELLO, system: "x".repeat(400) },
      settings,
    );
    fake.fault = "none";
    strictEqual(result.source, "rough-fallback");
    // The estimate reads the top-level system: 400 chars / 4 + "Hello".
    strictEqual(result.promptTokens, 100 + 2);
    strictEqual(result.request.max_tokens, 100_000 - 102 - 1024);
  });
});

Deno.test("AnthropicBackend never leaks its key or the prompt", async (t) => {
  const secret = `sk-canary-${crypto.randomUUID()}`;
  const prompt = `prompt-canary-${crypto.randomUUID()}`;
  const request = {
    model: MODEL,
    messages: [{ role: "user", content: prompt }],
  };
  await using logs = await captureLogs();
  await using server = await serveFakeAnthropic({ apiKey: secret });
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
    new AnthropicBackend({ url, apiKey: secret, cache: null, fetch: spy });

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
  await t.step("the key goes only in x-api-key, only to count_tokens", () => {
    ok(sent.length >= 4);
    for (const { url, headers } of sent) {
      strictEqual(new URL(url).pathname, "/v1/messages/count_tokens");
      strictEqual(headers.get("x-api-key"), secret);
      for (const [name, value] of headers) {
        if (name !== "x-api-key") ok(!value.includes(secret), name);
      }
    }
    for (const recorded of server.requests) {
      ok(!recorded.text.includes(secret));
    }
  });
});

Deno.test("new AnthropicBackend() validates its options", async (t) => {
  await t.step("the default URL", async () => {
    const urls: string[] = [];
    const backend = new AnthropicBackend({
      cache: null,
      fetch: (input) => {
        urls.push(String(input));
        return Promise.resolve(Response.json({ input_tokens: 3 }));
      },
    });
    strictEqual(await backend.count(HELLO, OPTIONS), 3);
    deepStrictEqual(urls, [
      `${ANTHROPIC_DEFAULT_URL}/v1/messages/count_tokens`,
    ]);
  });
  await t.step("a base path and query string are kept", async () => {
    const urls: string[] = [];
    const backend = new AnthropicBackend({
      url: "http://gateway.test/anthropic/?tenant=a",
      cache: null,
      fetch: (input) => {
        urls.push(String(input));
        return Promise.resolve(Response.json({ input_tokens: 3 }));
      },
    });
    await backend.count(HELLO, OPTIONS);
    deepStrictEqual(urls, [
      "http://gateway.test/anthropic/v1/messages/count_tokens?tenant=a",
    ]);
  });
  await t.step("bad options throw, never echoing the key", () => {
    throws(() => new AnthropicBackend({ url: "ftp://x" }), TypeError);
    throws(() => new AnthropicBackend({ timeoutSeconds: 0 }), RangeError);
    throws(() => new AnthropicBackend({ model: " " }), TypeError);
    throws(
      () => new AnthropicBackend({ apiKey: "sk-secret\nx" }),
      (error: unknown) =>
        error instanceof TypeError && error.message.includes("'apiKey'") &&
        !error.message.includes("sk-secret"),
    );
  });
  await t.step("count() rejects a bad context length", async () => {
    await rejects(
      new AnthropicBackend({ cache: null }).count(HELLO, { contextLength: 0 }),
      RangeError,
    );
  });
});

Deno.test("anthropicFromConfig() builds the backend from configuration", async (t) => {
  const env = { INCONTEXT_BACKEND: "anthropic" };
  await t.step("requires INCONTEXT_ANTHROPIC_API_KEY", () => {
    throws(
      () => anthropicFromConfig(loadConfig(env)),
      (error: unknown) =>
        error instanceof ConfigError &&
        error.issues.some((i) => i.variable === "INCONTEXT_ANTHROPIC_API_KEY"),
    );
  });
  await t.step("uses the URL, key and model", async () => {
    await using server = await serveFakeAnthropic({ apiKey: KEY });
    const config = loadConfig({
      ...env,
      INCONTEXT_ANTHROPIC_API_KEY: KEY,
      INCONTEXT_TOKENIZER_URL: server.url,
      INCONTEXT_MODEL: "claude-haiku-4-5",
    });
    const backend = anthropicFromConfig(config);
    await backend.clearCache();
    ok(Number(await backend.count({ messages: HELLO.messages }, OPTIONS)) > 0);
    strictEqual(
      (server.requests[0]?.body as JsonObject).model,
      "claude-haiku-4-5",
    );
    await backend.clearCache();
  });
});

Deno.test("conformance: anthropic against the Anthropic protocol server", async (t) => {
  await using server = await serveFakeAnthropic({ apiKey: KEY });
  await using failing = await serveFakeAnthropic({ fault: "http-529" });
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
  await t.step("Messages-shaped requests", (t) =>
    run(t, {
      request: {
        model: MODEL,
        max_tokens: 4096,
        system: "You are terse. conformance-marker-7d1f0c",
        messages: [{ role: "user", content: [{ type: "text", text: "Hi" }] }],
      },
      grow: (request: JsonObject, text: string) => ({
        ...request,
        messages: [
          ...(request.messages as unknown[]),
          { role: "assistant", content: "Hello." },
          { role: "user", content: [{ type: "text", text }] },
        ],
      }),
    }));
});
