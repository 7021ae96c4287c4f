// Covers: src/proxy/handler.ts, src/proxy/upstream.ts
import {
  deepStrictEqual,
  match,
  notStrictEqual,
  ok,
  rejects,
  strictEqual,
} from "node:assert/strict";
import OpenAI from "openai";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { generateText } from "ai";
import { FakeBackend } from "../../src/testing/mod.ts";
import { createProxyHandler } from "../../src/proxy/mod.ts";
import { C, postJson, proxyFixture, W } from "../_kit/proxy_fixture.ts";
import { until } from "../_kit/hang.ts";

const chat = (content: string) => ({
  model: "m",
  messages: [{ role: "user", content }],
});

Deno.test("the proxy budgets what the openai SDK, the AI SDK and curl send", async (t) => {
  await using proxy = await proxyFixture();
  const { upstream } = proxy;

  await t.step(
    "openai SDK: exact budget, decision headers, usage passed through",
    async () => {
      const client = new OpenAI({
        baseURL: proxy.baseUrl,
        apiKey: "sk-up",
        maxRetries: 0,
      });
      const { data, response } = await client.chat.completions.create({
        model: "m",
        max_tokens: 65536,
        messages: [{ role: "user", content: "Hello there" }],
      }).withResponse();
      const prompt = Number(response.headers.get("x-incontext-prompt-tokens"));
      strictEqual(response.headers.get("x-incontext-action"), "set");
      strictEqual(response.headers.get("x-incontext-source"), "vllm-tokenize");
      strictEqual(prompt, data.usage?.prompt_tokens); // the count is exact
      strictEqual(
        Number(response.headers.get("x-incontext-max-tokens")),
        W - prompt,
      );
      const sent = upstream.requests.find((r) =>
        r.path === "/v1/chat/completions"
      )!;
      strictEqual((sent.body as { max_tokens: number }).max_tokens, W - prompt);
      strictEqual(sent.headers.authorization, "Bearer sk-up");
      ok(
        upstream.requests.filter((r) => r.path === "/tokenize").every((r) =>
          !r.headers.authorization
        ),
      );
    },
  );

  await t.step(
    "AI SDK: OpenAI-compatible provider pointed at the proxy",
    async () => {
      const provider = createOpenAICompatible({
        name: "proxy",
        baseURL: proxy.baseUrl,
      });
      const { text } = await generateText({
        model: provider.chatModel("m"),
        prompt: "Hi",
        maxRetries: 0,
      });
      ok(text.startsWith("Noted"));
      const sent = upstream.requests.findLast((r) =>
        r.path === "/v1/chat/completions"
      )!;
      ok((sent.body as { max_tokens: number }).max_tokens > 50_000);
    },
  );

  await t.step("a client outside Deno: Node's http module", async () => {
    // Node is on every machine that runs the suite; its HTTP/1.1 client
    // shares no code with Deno's fetch.
    const script = `
      const body = process.argv[2];
      const request = require("node:http").request(process.argv[1], {
        method: "POST",
        headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) },
      }, (response) => {
        let text = "HTTP/" + response.httpVersion + " " + response.statusCode + "\\r\\n";
        for (const [name, value] of Object.entries(response.headers)) text += name + ": " + value + "\\r\\n";
        text += "\\r\\n";
        response.setEncoding("utf8");
        response.on("data", (chunk) => text += chunk);
        response.on("end", () => process.stdout.write(text));
      });
      request.end(body);
    `;
    const { code, stdout } = await new Deno.Command("node", {
      args: [
        "-e",
        script,
        `${proxy.baseUrl}/chat/completions`,
        JSON.stringify(chat("from node")),
      ],
    }).output();
    strictEqual(code, 0);
    const text = new TextDecoder().decode(stdout);
    ok(text.startsWith("HTTP/1.1 200"), text);
    ok(/x-incontext-action: set/i.test(text), text);
    ok(text.includes('"Noted: 1 messages."'), text);
  });

  await t.step("completions and responses are budgeted too", async () => {
    const client = new OpenAI({
      baseURL: proxy.baseUrl,
      apiKey: "-",
      maxRetries: 0,
    });
    await client.completions.create({ model: "m", prompt: "Once" });
    ok(
      (upstream.requests.at(-1)!.body as { max_tokens: number }).max_tokens >
        50_000,
    );
    await client.responses.create({ model: "m", input: "Hi" });
    ok(
      (upstream.requests.at(-1)!.body as { max_output_tokens: number })
        .max_output_tokens > 50_000,
    );
  });
});

Deno.test("the proxy streams bytes through untouched, usage included", async (t) => {
  await using proxy = await proxyFixture();
  const body = {
    ...chat("stream me"),
    max_tokens: 1000,
    stream: true,
    stream_options: { include_usage: true },
  };
  await t.step("bytes identical to the upstream's", async () => {
    // The fake numbers its completions and stamps them with the second;
    // everything else repeats byte for byte.
    const numbered = (text: string) =>
      text.replace(/chatcmpl-fake-\d+/g, "chatcmpl-fake-N")
        .replace(/"created":\d+/g, '"created":0');
    const upstream = await postJson(
      `${proxy.upstream.baseUrl}/chat/completions`,
      body,
    );
    const direct = await upstream.text();
    const proxied = await postJson(`${proxy.baseUrl}/chat/completions`, body);
    const type = proxied.headers.get("content-type");
    strictEqual(type, upstream.headers.get("content-type"));
    ok(type?.startsWith("text/event-stream"));
    strictEqual(numbered(await proxied.text()), numbered(direct));
    ok(direct.includes('"usage"') && direct.trimEnd().endsWith("data: [DONE]"));
  });
  await t.step("the openai SDK sees the final usage chunk", async () => {
    const client = new OpenAI({
      baseURL: proxy.baseUrl,
      apiKey: "-",
      maxRetries: 0,
    });
    const stream = await client.chat.completions.create({
      model: "m",
      messages: [{ role: "user", content: "stream" }],
      stream: true,
      stream_options: { include_usage: true },
    });
    let usage;
    for await (const chunk of stream) usage = chunk.usage ?? usage;
    ok(usage && usage.prompt_tokens > 0);
  });
  await t.step(
    "an upstream cut mid-stream ends the client's stream with an error",
    async () => {
      proxy.upstream.fault = "cut";
      const response = await postJson(
        `${proxy.baseUrl}/chat/completions`,
        body,
      );
      await rejects(response.text());
      proxy.upstream.fault = "none";
    },
  );
});

Deno.test("the proxy learns usage anchors on a growing conversation", async (t) => {
  await t.step(
    "with an exact backend the anchor is a cross-check",
    async () => {
      await using proxy = await proxyFixture();
      const client = new OpenAI({
        baseURL: proxy.baseUrl,
        apiKey: "-",
        maxRetries: 0,
      });
      const started = Date.now();
      const messages: OpenAI.ChatCompletionMessageParam[] = [];
      for (let turn = 0; turn < 4; turn++) {
        messages.push({
          role: "user",
          content: `Turn ${turn}: ${"lorem ipsum ".repeat(200)}`,
        });
        const reply = await client.chat.completions.create({
          model: "m",
          messages,
        });
        messages.push({
          role: "assistant",
          content: reply.choices[0]!.message.content,
          refusal: null,
        });
      }
      const context = await (await fetch(`${proxy.url}/incontext/context`))
        .json();
      strictEqual(context.window, W);
      strictEqual(context.decisions.length, 4);
      strictEqual(context.decisions[0].anchorTokens, null);
      const times = context.decisions.map((decision: { time: string }) =>
        Date.parse(decision.time)
      );
      for (const [i, time] of times.entries()) {
        match(context.decisions[i].time, /^\d{4}-\d\d-\d\dT[\d:.]{12}Z$/);
        ok(
          time >= started && time <= Date.now() && time >= (times[i - 1] ?? 0),
        );
      }
      for (const decision of context.decisions.slice(1)) {
        ok(
          Math.abs(decision.anchorTokens - decision.promptTokens) /
              decision.promptTokens < 0.05,
        );
      }
    },
  );
  /** Two turns through a proxy that cannot count: the second's count is the first's usage anchor. */
  const secondTurn = async (first: { role: string; content: string }[]) => {
    await using proxy = await proxyFixture({
      backend: new FakeBackend({ error: new Error("no count") }),
    });
    const one = await postJson(`${proxy.baseUrl}/chat/completions`, {
      model: "m",
      messages: first,
    });
    const { choices, usage } = await one.json();
    strictEqual(one.headers.get("x-incontext-source"), "rough-fallback");
    const two = await postJson(`${proxy.baseUrl}/chat/completions`, {
      model: "m",
      messages: [...first, choices[0].message, {
        role: "user",
        content: "More",
      }],
    });
    await two.body?.cancel();
    strictEqual(two.headers.get("x-incontext-source"), "usage-anchor");
    // "More" = 1 token
    strictEqual(
      Number(two.headers.get("x-incontext-prompt-tokens")),
      usage.prompt_tokens + usage.completion_tokens + 1,
    );
  };
  await t.step(
    "with a backend that cannot count, the anchor is the count",
    () => secondTurn([{ role: "user", content: "Hello" }]),
  );
  await t.step(
    "a long conversation's whole answer is learned from too (its bookkeeping runs while the upstream works)",
    async () => {
      const first = [{ role: "user", content: "word ".repeat(20_000) }];
      ok(JSON.stringify({ model: "m", messages: first }).length > 64 * 1024);
      await secondTurn(first);
    },
  );
});

Deno.test("the proxy follows the exhausted policy", async (t) => {
  const tight = () => new FakeBackend({ count: W - 100 });
  await t.step(
    "clamp: R below the hard limit, with action compress",
    async () => {
      await using proxy = await proxyFixture({ backend: tight() });
      const response = await postJson(`${proxy.baseUrl}/chat/completions`, {
        ...chat("x"),
        max_tokens: 65536,
      });
      await response.body?.cancel();
      strictEqual(response.headers.get("x-incontext-action"), "compress");
      strictEqual(Number(response.headers.get("x-incontext-max-tokens")), 4096);
      strictEqual(
        (proxy.upstream.requests.at(-1)!.body as { max_tokens: number })
          .max_tokens,
        4096,
      );
    },
  );
  await t.step(
    "reject: 400 context_length_exceeded before any upstream call",
    async () => {
      await using proxy = await proxyFixture({
        backend: tight(),
        onExhausted: "reject",
      });
      const response = await postJson(
        `${proxy.baseUrl}/chat/completions`,
        chat("x"),
      );
      strictEqual(response.status, 400);
      strictEqual(
        (await response.json()).error.code,
        "context_length_exceeded",
      );
      strictEqual(proxy.upstream.requests.length, 0);
    },
  );
  await t.step("unchanged: forwarded as is", async () => {
    await using proxy = await proxyFixture({
      backend: tight(),
      onExhausted: "unchanged",
    });
    const response = await postJson(`${proxy.baseUrl}/chat/completions`, {
      ...chat("x"),
      max_tokens: 7,
    });
    await response.body?.cancel();
    strictEqual(
      proxy.upstream.requests.at(-1)!.text,
      JSON.stringify({ ...chat("x"), max_tokens: 7 }),
    );
  });
});

Deno.test("the proxy refuses what it cannot read, and nothing reaches the upstream", async (t) => {
  await using proxy = await proxyFixture({ maxRequestBytes: 2048 });
  await t.step(
    "413 for a body over the limit, declared or streamed",
    async () => {
      const big = { ...chat("x".repeat(4096)) };
      const declared = await postJson(`${proxy.baseUrl}/chat/completions`, big);
      strictEqual(declared.status, 413);
      strictEqual((await declared.json()).error.code, "request_too_large");
      const streamed = await fetch(`${proxy.baseUrl}/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: new Blob([JSON.stringify(big)]).stream(),
      });
      strictEqual(streamed.status, 413);
      await streamed.body?.cancel();
    },
  );
  await t.step(
    "413 for a body longer than its declared length",
    async () => {
      let called = false;
      const handler = createProxyHandler({
        upstream: "http://upstream.test",
        window: W,
        contextLength: C,
        backend: new FakeBackend({ count: 10 }),
        maxRequestBytes: 2048,
        fetch: () => {
          called = true;
          return Promise.resolve(Response.json({}));
        },
      });
      const response = await handler(
        new Request("http://proxy.test/v1/chat/completions", {
          method: "POST",
          headers: {
            "content-type": "application/json",
            "content-length": "100",
          },
          body: JSON.stringify(chat("x".repeat(4096))),
        }),
      );
      strictEqual(response.status, 413);
      strictEqual((await response.json()).error.code, "request_too_large");
      strictEqual(called, false);
    },
  );
  await t.step("400 for malformed JSON", async () => {
    const response = await postJson(
      `${proxy.baseUrl}/chat/completions`,
      "{nope",
    );
    strictEqual(response.status, 400);
    ok((await response.json()).error.message.includes("not valid JSON"));
  });
  strictEqual(proxy.upstream.requests.length, 0);
  await t.step(
    "other content types and paths are forwarded untouched",
    async () => {
      const models = await (await fetch(`${proxy.baseUrl}/models`)).json();
      strictEqual(models.data[0].max_model_len, C);
      const text = await fetch(`${proxy.baseUrl}/chat/completions`, {
        method: "POST",
        headers: { "content-type": "text/plain" },
        body: "plain",
      });
      await text.body?.cancel();
      strictEqual(proxy.upstream.requests.at(-1)!.text, "plain");
      strictEqual(text.headers.get("x-incontext-action"), null);
    },
  );
});

Deno.test("the proxy answers 502 when the upstream is down, and reports health", async () => {
  await using proxy = await proxyFixture();
  const healthy = await fetch(`${proxy.url}/incontext/healthz`);
  const { checkedAt: _, ...found } = await healthy.json();
  deepStrictEqual(found, {
    status: "ready",
    configuration: "valid",
    upstream: "reachable",
    tokenizer: "reachable",
  });
  await proxy.upstream[Symbol.asyncDispose]();
  const response = await postJson(
    `${proxy.baseUrl}/chat/completions`,
    chat("x"),
  );
  strictEqual(response.status, 502);
  const { error } = await response.json();
  strictEqual(error.code, "upstream_unreachable");
  const sick = await fetch(`${proxy.url}/incontext/healthz`);
  strictEqual(sick.status, 503);
  strictEqual((await sick.json()).upstream, "unreachable");
});

Deno.test("the proxy keeps concurrent requests apart", async () => {
  await using proxy = await proxyFixture();
  const results = await Promise.all(Array.from({ length: 40 }, async (_, i) => {
    const messages = Array.from(
      { length: i + 1 },
      (_, j) => ({ role: "user", content: `m${j}` }),
    );
    const response = await postJson(`${proxy.baseUrl}/chat/completions`, {
      model: "m",
      messages,
    });
    return (await response.json()).choices[0].message.content;
  }));
  results.forEach((content, i) =>
    strictEqual(content, `Noted: ${i + 1} messages.`)
  );
});

Deno.test("a client abort cancels the upstream request", async () => {
  await using proxy = await proxyFixture();
  proxy.upstream.fault = "stall";
  const controller = new AbortController();
  const pending = postJson(`${proxy.baseUrl}/chat/completions`, chat("x"), {
    signal: controller.signal,
  });
  while (
    !proxy.upstream.requests.some((r) => r.path === "/v1/chat/completions")
  ) {
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  controller.abort();
  await rejects(pending);
  // The proxy's own upstream fetch was aborted: a disconnect, not an
  // unreachable upstream.
  const gone = 'incontext_client_disconnects_total{phase="upstream"} 1';
  let metrics = "";
  await until(async () => {
    metrics = await (await fetch(`${proxy.url}/incontext/metrics`)).text();
    return metrics.includes(gone);
  }, "the disconnect's count");
  ok(!metrics.includes('incontext_upstream_responses_total{status="0"}'));
});

Deno.test("the proxy learns an anchor from a streamed response's final usage chunk", async () => {
  await using proxy = await proxyFixture({
    backend: new FakeBackend({ error: new Error("no count") }),
  });
  const first = [{ role: "user", content: "Hello" }];
  const streamed = await postJson(`${proxy.baseUrl}/chat/completions`, {
    model: "m",
    messages: first,
    stream: true,
    stream_options: { include_usage: true },
  });
  const text = await streamed.text();
  const usage = JSON.parse(
    text.split("\n").filter((line) => line.includes('"usage"')).at(-1)!.slice(
      "data: ".length,
    ),
  ).usage;
  const reply = { role: "assistant", content: "Noted: 1 messages." };
  const next = await postJson(`${proxy.baseUrl}/chat/completions`, {
    model: "m",
    messages: [...first, reply, { role: "user", content: "More" }],
  });
  await next.body?.cancel();
  strictEqual(next.headers.get("x-incontext-source"), "usage-anchor");
  strictEqual(
    Number(next.headers.get("x-incontext-prompt-tokens")),
    usage.prompt_tokens + usage.completion_tokens + 1,
  );
});

/** A shutdown signal that tells which of its abort listeners are attached. */
function watchedSignal(): { signal: AbortSignal; attached: Set<unknown> } {
  const { signal } = new AbortController();
  const attached = new Set<unknown>();
  const add = signal.addEventListener.bind(signal);
  const remove = signal.removeEventListener.bind(signal);
  signal.addEventListener = (type: string, listener: unknown) => {
    attached.add(listener);
    add(type, listener as EventListener);
  };
  signal.removeEventListener = (type: string, listener: unknown) => {
    attached.delete(listener);
    remove(type, listener as EventListener);
  };
  return { signal, attached };
}

Deno.test("a finished exchange leaves no listener on the shutdown signal", async (t) => {
  const { signal, attached } = watchedSignal();
  await using proxy = await proxyFixture({ signal });
  await t.step("a whole JSON answer", async () => {
    const response = await postJson(
      `${proxy.baseUrl}/chat/completions`,
      chat("a"),
    );
    await response.json();
  });
  await t.step("a streamed answer read to its end", async () => {
    const response = await postJson(`${proxy.baseUrl}/chat/completions`, {
      ...chat("b"),
      stream: true,
    });
    await response.text();
  });
  await t.step("a forwarded GET", async () => {
    await (await fetch(`${proxy.baseUrl}/models`)).json();
  });
  await t.step("an upstream cut mid-stream", async () => {
    proxy.upstream.fault = "cut";
    const response = await postJson(`${proxy.baseUrl}/chat/completions`, {
      ...chat("c"),
      stream: true,
    });
    await rejects(response.text());
    proxy.upstream.fault = "none";
  });
  await t.step("a client that leaves before the answer", async () => {
    proxy.upstream.fault = "stall";
    const controller = new AbortController();
    const pending = postJson(`${proxy.baseUrl}/chat/completions`, chat("d"), {
      signal: controller.signal,
    });
    while (!proxy.upstream.requests.some((r) => r.fault === "stall")) {
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    controller.abort();
    await rejects(pending);
    proxy.upstream.fault = "none";
  });
  await until(() => attached.size === 0, "the signal's listeners detach");
  strictEqual(attached.size, 0);
});

Deno.test("a client that cancels a streamed answer unlinks it from the shutdown signal", async () => {
  const { signal, attached } = watchedSignal();
  let cancelled = false;
  const proxy = createProxyHandler({
    upstream: "http://upstream.test",
    window: W,
    contextLength: C,
    backend: new FakeBackend({ count: 5 }),
    signal,
    fetch: () =>
      Promise.resolve(
        new Response(
          new ReadableStream({
            start(controller) {
              controller.enqueue(new TextEncoder().encode("data: {}\n\n"));
            },
            cancel() {
              cancelled = true;
            },
          }),
          { headers: { "content-type": "text/event-stream" } },
        ),
      ),
  });
  const response = await proxy(
    new Request("http://proxy.test/v1/chat/completions", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ ...chat("e"), stream: true }),
    }),
  );
  const reader = response.body!.getReader();
  await reader.read();
  strictEqual(attached.size, 1);
  await reader.cancel();
  strictEqual(cancelled, true);
  strictEqual(attached.size, 0);
});

Deno.test("a cap that is already the budget leaves the body's bytes as they came", async (t) => {
  await using proxy = await proxyFixture();
  const last = () =>
    proxy.upstream.requests.filter((r) => r.path === "/v1/chat/completions")
      .at(-1)!;
  // Spaces and key order a rewrite would not keep.
  const body = (cap: number) =>
    `{ "max_tokens" : ${cap},\n  "messages": [{"content": "Hi", "role": "user"}], "model": "m" }`;
  await t.step("a cap below W - P goes on byte for byte", async () => {
    const response = await postJson(
      `${proxy.baseUrl}/chat/completions`,
      body(512),
    );
    await response.body?.cancel();
    strictEqual(response.headers.get("x-incontext-action"), "set");
    strictEqual(response.headers.get("x-incontext-max-tokens"), "512");
    strictEqual(last().text, body(512));
  });
  await t.step("a cap above W - P is rewritten", async () => {
    const response = await postJson(
      `${proxy.baseUrl}/chat/completions`,
      body(C),
    );
    await response.body?.cancel();
    const sent = last();
    notStrictEqual(sent.text, body(C));
    const cap = Number(response.headers.get("x-incontext-max-tokens"));
    ok(cap < W);
    strictEqual((sent.body as { max_tokens: number }).max_tokens, cap);
  });
  await t.step("a cap written as a string becomes a number", async () => {
    const text = body(512).replace("512", '"512"');
    const response = await postJson(`${proxy.baseUrl}/chat/completions`, text);
    await response.body?.cancel();
    strictEqual((last().body as { max_tokens: unknown }).max_tokens, 512);
  });
});
