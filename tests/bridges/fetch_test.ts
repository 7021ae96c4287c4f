import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { generateText } from "ai";
import OpenAI from "openai";
import { budgetedFetch } from "../../src/bridges/fetch.ts";
import { createCountCache } from "../../src/cache/mod.ts";
import { VllmBackend } from "../../src/backends/vllm/mod.ts";
import { FakeBackend, serveFakeVllmTokenizer } from "../../src/testing/mod.ts";
import { serveUpstream } from "../_kit/upstream.ts";
import { captureLogs } from "../_kit/log_capture.ts";

/** An observer's own error class: its name is what the log may show. */
class ObserverBug extends Error {
  override readonly name = "ObserverBug";
}

const W = 55705;
const C = 65536;
const JSON_HEADERS = { "content-type": "application/json" };

interface Sent {
  input: RequestInfo | URL;
  init: RequestInit | undefined;
}

function recorder(): { sent: Sent[]; fetch: typeof fetch } {
  const sent: Sent[] = [];
  return {
    sent,
    fetch: (input, init) => {
      sent.push({ input, init });
      return Promise.resolve(new Response("{}"));
    },
  };
}

function post(body: string, headers: HeadersInit = JSON_HEADERS): RequestInit {
  return { method: "POST", headers, body };
}

Deno.test("budgetedFetch() budgets chat, completion and Responses POSTs", async (t) => {
  const { sent, fetch } = recorder();
  const budgeted = budgetedFetch(fetch, {
    window: W,
    contextLength: C,
    backend: new FakeBackend({ count: 1705 }),
  });
  await t.step("chat completions", async () => {
    await budgeted(
      "http://h/v1/chat/completions",
      post('{"messages":[],"max_tokens":65536}'),
    );
    strictEqual(sent.at(-1)?.init?.body, '{"messages":[],"max_tokens":54000}');
  });
  await t.step("completions", async () => {
    await budgeted("http://h/v1/completions", post('{"prompt":"x"}'));
    strictEqual(sent.at(-1)?.init?.body, '{"prompt":"x","max_tokens":54000}');
  });
  await t.step("responses, as max_output_tokens", async () => {
    await budgeted(new URL("http://h/v1/responses"), post('{"input":"x"}'));
    strictEqual(
      sent.at(-1)?.init?.body,
      '{"input":"x","max_output_tokens":54000}',
    );
  });
  await t.step(
    "a Request object, with its other headers kept and content-length dropped",
    async () => {
      await budgeted(
        new Request("http://h/v1/chat/completions", {
          method: "POST",
          headers: {
            ...JSON_HEADERS,
            authorization: "Bearer k",
            "content-length": "15",
          },
          body: '{"messages":[]}',
        }),
      );
      const forwarded = sent.at(-1)?.input as Request;
      strictEqual(await forwarded.text(), '{"messages":[],"max_tokens":54000}');
      strictEqual(forwarded.headers.get("authorization"), "Bearer k");
      strictEqual(forwarded.headers.get("content-length"), null);
    },
  );
  await t.step("a Uint8Array body", async () => {
    await budgeted("http://h/v1/chat/completions", {
      method: "POST",
      headers: JSON_HEADERS,
      body: new TextEncoder().encode('{"messages":[]}'),
    });
    strictEqual(sent.at(-1)?.init?.body, '{"messages":[],"max_tokens":54000}');
  });
});

Deno.test("budgetedFetch() passes everything else through untouched", async () => {
  const { sent, fetch } = recorder();
  const backend = new FakeBackend({ count: 1 });
  const budgeted = budgetedFetch(fetch, {
    window: W,
    contextLength: C,
    backend,
  });
  const stream = new ReadableStream({
    start(c) {
      c.enqueue(new TextEncoder().encode('{"messages":[]}'));
      c.close();
    },
  });
  const invalidUtf8 = new Uint8Array([
    0x7b,
    0x22,
    0x61,
    0x22,
    0x3a,
    0x22,
    0xff,
    0x22,
    0x7d,
  ]);
  const cases: [RequestInfo | URL, RequestInit | undefined][] = [
    ["http://h/v1/models", undefined],
    ["http://h/v1/chat/completions", { method: "GET" }],
    ["http://h/v1/embeddings", post('{"input":"x"}')],
    [
      "http://h/v1/chat/completions",
      post('{"messages":[]}', { "content-type": "text/plain" }),
    ],
    ["http://h/v1/chat/completions", post("not json")],
    ["http://h/v1/chat/completions", post("[1,2]")],
    ["http://h/v1/chat/completions", {
      method: "POST",
      headers: JSON_HEADERS,
      body: invalidUtf8,
    }],
    ["http://h/v1/chat/completions", {
      method: "POST",
      headers: JSON_HEADERS,
      body: stream,
    }],
    ["http://h/v1/chat/completions", post('{"model":"m"}')],
  ];
  for (const [input, init] of cases) {
    await budgeted(input, init);
    const last = sent.at(-1)!;
    strictEqual(last.input, input);
    strictEqual(last.init, init);
  }
  strictEqual(sent.length, cases.length);
  strictEqual(backend.calls.length, 0);
});

Deno.test("budgetedFetch() follows the exhausted policy", async (t) => {
  const tight = new FakeBackend({ count: W - 100 }); // 100 left below W, 65536 - 55605 = 9931 below C
  await t.step(
    "clamp (default): min(caller's cap, R) while the context holds it",
    async () => {
      const { sent, fetch } = recorder();
      const budgeted = budgetedFetch(fetch, {
        window: W,
        contextLength: C,
        backend: tight,
      });
      await budgeted(
        "http://h/v1/chat/completions",
        post('{"messages":[],"max_completion_tokens":65536}'),
      );
      strictEqual(
        sent.at(-1)?.init?.body,
        `{"messages":[],"max_completion_tokens":4096}`,
      );
      await budgeted(
        "http://h/v1/chat/completions",
        post('{"messages":[],"max_completion_tokens":300}'),
      );
      strictEqual(
        sent.at(-1)?.init?.body,
        `{"messages":[],"max_completion_tokens":300}`,
      );
    },
  );
  await t.step(
    "reject: the overflow 400 in vLLM's wording, no upstream call",
    async () => {
      const { sent, fetch } = recorder();
      const response = await budgetedFetch(fetch, {
        window: W,
        contextLength: C,
        backend: tight,
        onExhausted: "reject",
      })(
        "http://h/v1/chat/completions",
        post('{"messages":[]}'),
      );
      strictEqual(sent.length, 0);
      strictEqual(response.status, 400);
      // The same decision headers as the proxy's and the middleware's answer.
      strictEqual(response.headers.get("x-incontext-action"), "compress");
      const { error } = await response.json();
      strictEqual(error.code, "context_length_exceeded");
      strictEqual(error.type, "invalid_request_error");
      strictEqual(
        error.message,
        `This model's maximum context length is ${C} tokens, and its compression window is ${W} tokens. However, your prompt contains ${
          W - 100
        } input tokens, which leaves 100 tokens for the reply below the compression window, fewer than the 4096 it needs. Please reduce the length of the messages.`,
      );
    },
  );
  await t.step(
    "clamp answers the overflow once the context no longer holds min(caller's cap, R)",
    async () => {
      for (
        const [count, body] of [
          [C + 5, '{"messages":[]}'],
          [C - 4095, '{"messages":[]}'],
          [C - 4095, '{"messages":[],"max_tokens":4096}'],
          [C - 299, '{"messages":[],"max_tokens":300}'],
        ] as const
      ) {
        const { sent, fetch } = recorder();
        const response = await budgetedFetch(fetch, {
          window: W,
          contextLength: C,
          backend: new FakeBackend({ count }),
        })("http://h/v1/chat/completions", post(body));
        strictEqual(response.status, 400, `${count} ${body}`);
        strictEqual(sent.length, 0);
        const { error } = await response.json();
        ok(
          error.message.includes(
            `leaves ${
              Math.max(0, C - count)
            } tokens for the reply within the maximum context length`,
          ),
          error.message,
        );
      }
      // One token more room: the smallest reply fits, and is sent.
      const { sent, fetch } = recorder();
      await budgetedFetch(fetch, {
        window: W,
        contextLength: C,
        backend: new FakeBackend({ count: C - 300 }),
      })(
        "http://h/v1/chat/completions",
        post('{"messages":[],"max_tokens":300}'),
      );
      strictEqual(sent.at(-1)?.init?.body, '{"messages":[],"max_tokens":300}');
    },
  );
  await t.step("unchanged: forwards the original", async () => {
    const { sent, fetch } = recorder();
    const init = post('{"messages":[],"max_tokens":65536}');
    await budgetedFetch(fetch, {
      window: W,
      contextLength: C,
      backend: tight,
      onExhausted: "unchanged",
    })(
      "http://h/v1/chat/completions",
      init,
    );
    strictEqual(sent.at(-1)?.init, init);
  });
  await t.step(
    "onDecision sees every decision and cannot break the request",
    async () => {
      const { sent, fetch } = recorder();
      const seen: string[] = [];
      await using logs = await captureLogs();
      await budgetedFetch(fetch, {
        window: W,
        contextLength: C,
        backend: new FakeBackend({ count: 1 }),
        onDecision: (result, kind) => {
          seen.push(`${kind}:${result.action}`);
          throw new ObserverBug("observer bug quoting sk-secret-prompt");
        },
      })("http://h/v1/responses", post('{"input":"x"}'));
      deepStrictEqual(seen, ["responses:set"]);
      strictEqual(sent.length, 1);
      // The failure is logged by its type alone, never its message.
      const warnings = logs.records.filter((record) =>
        record.level === "warning" && record.category.join(".") ===
          "incontext.bridge"
      );
      deepStrictEqual(warnings.map((record) => record.properties), [
        { errorType: "ObserverBug" },
      ]);
      ok(!logs.lines.some((line) => line.includes("sk-secret-prompt")));
    },
  );
});

Deno.test("budgetedFetch() works under the real openai SDK and the AI SDK", async (t) => {
  await using upstream = serveUpstream();
  await using tokenizer = await serveFakeVllmTokenizer({
    maxModelLen: C,
    countTokens: () => 1705,
  });
  await using cache = createCountCache({ inProcess: true });
  const backend = new VllmBackend({ url: tokenizer.url, cache });
  const fetch = budgetedFetch(globalThis.fetch, {
    window: W,
    contextLength: C,
    backend,
  });

  await t.step(
    "openai: chat completions, completions and responses",
    async () => {
      const client = new OpenAI({
        baseURL: upstream.baseUrl,
        apiKey: "sk-test",
        fetch,
        maxRetries: 0,
      });
      const chat = await client.chat.completions.create({
        model: "m",
        max_completion_tokens: 65536,
        messages: [{ role: "user", content: "Hi" }],
      });
      strictEqual(chat.choices[0]?.message.content, "ok");
      strictEqual(
        JSON.parse(upstream.received.at(-1)!.text).max_completion_tokens,
        W - 1705,
      );
      strictEqual(
        upstream.received.at(-1)!.headers.get("authorization"),
        "Bearer sk-test",
      );
      await client.completions.create({ model: "m", prompt: "Once" });
      strictEqual(
        JSON.parse(upstream.received.at(-1)!.text).max_tokens,
        W - 1705,
      );
      const response = await client.responses.create({
        model: "m",
        input: "Hi",
        max_output_tokens: 100,
      });
      strictEqual(response.output_text, "ok");
      strictEqual(
        JSON.parse(upstream.received.at(-1)!.text).max_output_tokens,
        100,
      );
      // the upstream's Authorization never reaches the tokenizer
      ok(
        tokenizer.requests.every((r) => r.headers.authorization === undefined),
      );
    },
  );

  await t.step(
    "AI SDK: OpenAI-compatible provider with a custom fetch",
    async () => {
      const provider = createOpenAICompatible({
        name: "local",
        baseURL: upstream.baseUrl,
        fetch,
      });
      const { text } = await generateText({
        model: provider.chatModel("m"),
        prompt: "Hi",
        maxRetries: 0,
      });
      strictEqual(text, "ok");
      strictEqual(
        JSON.parse(upstream.received.at(-1)!.text).max_tokens,
        W - 1705,
      );
    },
  );
});
