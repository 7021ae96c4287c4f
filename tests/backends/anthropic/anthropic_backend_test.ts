import { deepStrictEqual, ok, strictEqual, throws } from "node:assert/strict";
import {
  ANTHROPIC_DEFAULT_URL,
  AnthropicBackend,
  type AnthropicBackendOptions,
  anthropicFromConfig,
} from "../../../src/backends/anthropic/mod.ts";
import type { JsonObject } from "../../../src/core/backend.ts";
import { budget } from "../../../src/core/budget.ts";
import { loadConfig } from "../../../src/config/mod.ts";
import { createCountCache } from "../../../src/cache/mod.ts";
import {
  createFakeAnthropicHandler,
  type FakeAnthropic,
  type FakeAnthropicFault,
  serveFakeAnthropic,
} from "../../../src/testing/fake_anthropic_server.ts";
import * as kit from "../../_kit/backend_kit.ts";

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

Deno.test("AnthropicBackend.count() speaks count_tokens", async (t) => {
  await using server = await serveFakeAnthropic({ apiKey: KEY });

  await t.step("posts the body with the key and version headers", async () => {
    server.requests.length = 0;
    const counted = await backendFor(server).count(HELLO, OPTIONS);
    strictEqual(server.requests.length, 1);
    const [sent] = server.requests;
    kit.assertEverySent(server.requests, {
      method: "POST",
      path: "/v1/messages/count_tokens",
      headers: {
        ...kit.DEFAULT_HEADERS,
        "x-api-key": KEY,
        "anthropic-version": "2023-06-01",
      },
    });
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
        ...kit.AGENT_TURN,
        { role: "user", content: "And tomorrow?" },
        { role: "user", content: "Briefly." },
      ],
      tools: [kit.WEATHER_TOOL],
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
      await kit.countError(backend.count(remote, OPTIONS));
      await kit.countError(
        backend.count({ messages: HELLO.messages }, OPTIONS),
      );
      await kit.countError(
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

Deno.test("AnthropicBackend.count() fails on the API's own errors, without retrying", async (t) => {
  await using server = await serveFakeAnthropic();
  const faults: [FakeAnthropicFault, string][] = [
    ["prompt-too-long", "HTTP 400"],
    ["invalid-count", "invalid input_tokens"],
  ];
  for (const [fault, phrase] of faults) {
    await t.step(fault, async () => {
      server.fault = fault;
      server.requests.length = 0;
      const error = await kit.countError(
        backendFor(server).count(HELLO, OPTIONS),
      );
      ok(error.message.includes(phrase), error.message);
      strictEqual(server.requests.length, 1);
    });
  }
});

Deno.test("AnthropicBackend.count() keys its cache by the context length too", async () => {
  const fake = createFakeAnthropicHandler();
  await using cache = createCountCache({ inProcess: true });
  const backend = new AnthropicBackend({ fetch: fake.fetch, cache });
  const first = await backend.count(HELLO, OPTIONS);
  strictEqual(await backend.count(structuredClone(HELLO), OPTIONS), first);
  strictEqual(fake.requests.length, 1);
  await backend.count(HELLO, { contextLength: CONTEXT - 1 });
  strictEqual(fake.requests.length, 2);
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
    const result = await kit.budgetUnderFault(fake, "http-529", {
      ...HELLO,
      system: "x".repeat(400),
    }, settings);
    // The estimate reads the top-level system: 400 chars / 4 + "Hello".
    strictEqual(result.promptTokens, 100 + 2);
    strictEqual(result.request.max_tokens, 100_000 - 102 - 1024);
  });
});

Deno.test("new AnthropicBackend() validates its options", async (t) => {
  await t.step("the default URL", async () => {
    const { fetch, urls } = kit.urlRecorder({ input_tokens: 3 });
    const backend = new AnthropicBackend({
      cache: null,
      fetch,
    });
    strictEqual(await backend.count(HELLO, OPTIONS), 3);
    deepStrictEqual(urls, [
      `${ANTHROPIC_DEFAULT_URL}/v1/messages/count_tokens`,
    ]);
  });
  await t.step("a base path and query string are kept", async () => {
    const { fetch, urls } = kit.urlRecorder({ input_tokens: 3 });
    const backend = new AnthropicBackend({
      url: "http://gateway.test/anthropic/?tenant=a",
      cache: null,
      fetch,
    });
    await backend.count(HELLO, OPTIONS);
    deepStrictEqual(urls, [
      "http://gateway.test/anthropic/v1/messages/count_tokens?tenant=a",
    ]);
  });
  await t.step("a blank model throws", () => {
    throws(() => new AnthropicBackend({ model: " " }), TypeError);
  });
});

Deno.test("anthropicFromConfig() builds the backend from configuration", async (t) => {
  const env = { INCONTEXT_BACKEND: "anthropic" };
  await t.step("requires INCONTEXT_ANTHROPIC_API_KEY", () => {
    kit.assertRequires(
      () => anthropicFromConfig(loadConfig(env)),
      "INCONTEXT_ANTHROPIC_API_KEY",
    );
  });
  await t.step("uses the URL, key and model", async () => {
    await using server = await serveFakeAnthropic({ apiKey: KEY });
    const config = loadConfig({
      ...env,
      INCONTEXT_ANTHROPIC_API_KEY: KEY,
      INCONTEXT_TOKENIZER_URL: server.url,
      INCONTEXT_COUNT_MODEL: "claude-haiku-4-5",
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
  const base = {
    create: () => backendFor(server),
    createFailing: () => backendFor(failing),
    contextLength: CONTEXT,
  };
  const run = (t: Deno.TestContext, extra = {}) =>
    kit.runConformance(t, base, extra);
  await t.step("OpenAI-shaped requests", (t) => run(t));
  await t.step("Messages-shaped requests", (t) =>
    run(t, {
      request: {
        model: MODEL,
        max_tokens: 4096,
        system: "You are terse. conformance-marker-7d1f0c",
        messages: [{ role: "user", content: [{ type: "text", text: "Hi" }] }],
      },
      grow: kit.growWith("messages", (text) => [
        { role: "assistant", content: "Hello." },
        { role: "user", content: [{ type: "text", text }] },
      ]),
    }));
});
