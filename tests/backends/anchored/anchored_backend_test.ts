// Covers: src/backends/anchored/anchored_backend.ts, src/anchors/record_usage.ts
import {
  deepStrictEqual,
  ok,
  rejects,
  strictEqual,
  throws,
} from "node:assert/strict";
import {
  AnchoredBackend,
  anchoredFromConfig,
  AnchorStore,
  recordResponseUsage,
} from "../../../src/backends/anchored/mod.ts";
import type { JsonObject } from "../../../src/core/backend.ts";
import { budget } from "../../../src/core/budget.ts";
import { loadConfig } from "../../../src/config/mod.ts";
import { CountError, TemplateRejectedError } from "../../../src/core/errors.ts";
import { roughEstimate } from "../../../src/core/estimate.ts";
import { FakeBackend } from "../../../src/testing/fake_backend.ts";
import { createFakeUpstreamHandler } from "../../../src/testing/fake_upstream.ts";
import { serveFakeVllmTokenizer } from "../../../src/testing/fake_vllm_server.ts";
import { budgetedFetch } from "../../../src/bridges/fetch.ts";
import { createProxyHandler } from "../../../src/proxy/mod.ts";
import { VllmBackend } from "../../../src/backends/vllm/mod.ts";
import {
  backendConformanceCases,
  type BackendConformanceOptions,
  CONFORMANCE_MARKER,
} from "../../../src/testing/backend_conformance.ts";
import { captureLogs } from "../../_kit/log_capture.ts";

const OPTIONS = { contextLength: 65536 };
const W = 55705;
const C = 65536;

type Message = Record<string, unknown>;
const user = (content: string): Message => ({ role: "user", content });
const assistant = (content: string): Message => ({
  role: "assistant",
  content,
});

const TURN1: JsonObject = {
  model: "m",
  messages: [{ role: "system", content: "Be brief." }, user("Hi")],
};

function extend(request: JsonObject, ...messages: Message[]): JsonObject {
  return {
    ...request,
    messages: [...(request.messages as Message[]), ...messages],
  };
}

function seeded(
  request: JsonObject = TURN1,
  prompt = 900,
  completion = 100,
): AnchorStore {
  const anchors = new AnchorStore();
  ok(recordResponseUsage(anchors, request, {
    usage: { prompt_tokens: prompt, completion_tokens: completion },
  }));
  return anchors;
}

// "Summarise the file." is 19 characters: 5 tokens to the rough estimator.
const APPENDED = user("Summarise the file.");

Deno.test("AnchoredBackend.count() adds the anchored usage and the appended messages", async (t) => {
  const backend = new AnchoredBackend({ anchors: seeded() });

  await t.step(
    "prompt + completion + estimate of the appended part",
    async () => {
      const turn2 = extend(TURN1, assistant("Hello!"), APPENDED);
      deepStrictEqual(await backend.count(turn2, OPTIONS), {
        tokens: 900 + 100 + 5,
        estimatedTokens: 5,
      });
    },
  );

  await t.step(
    "several appended messages (a tool call and its result)",
    async () => {
      const turn2 = extend(
        TURN1,
        assistant("Hello!"),
        user("Read a.ts"),
        { role: "tool", tool_call_id: "c1", content: "x".repeat(400) },
      );
      const appended = roughEstimate({
        messages: (turn2.messages as Message[]).slice(3),
      });
      strictEqual(appended, 3 + 100);
      deepStrictEqual(await backend.count(turn2, OPTIONS), {
        tokens: 1000 + appended,
        estimatedTokens: appended,
      });
    },
  );

  await t.step(
    "the same conversation sent again is the recorded prompt, exactly",
    async () => {
      deepStrictEqual(await backend.count(TURN1, OPTIONS), {
        tokens: 900,
        estimatedTokens: 0,
      });
    },
  );

  await t.step(
    "without the anchored reply, its completion is not counted",
    async () => {
      // The client dropped the reply and asked again differently.
      const retry = extend(TURN1, APPENDED);
      deepStrictEqual(await backend.count(retry, OPTIONS), {
        tokens: 900 + 5,
        estimatedTokens: 5,
      });
    },
  );

  await t.step("the longest recorded prefix wins", async () => {
    const anchors = seeded();
    const turn2 = extend(TURN1, assistant("Hello!"), APPENDED);
    recordResponseUsage(anchors, turn2, {
      usage: { prompt_tokens: 1010, completion_tokens: 40 },
    });
    const turn3 = extend(turn2, assistant("Done."), user("More"));
    deepStrictEqual(
      await new AnchoredBackend({ anchors }).count(turn3, OPTIONS),
      { tokens: 1010 + 40 + 1, estimatedTokens: 1 },
    );
  });

  await t.step(
    "an SDK's re-serialised echo of the messages still matches",
    async () => {
      const resent = {
        model: "m",
        messages: [
          { content: "Be brief.", role: "system", name: null },
          { role: "user", content: [{ type: "text", text: "Hi" }] },
          { role: "assistant", content: "Hello!", refusal: null },
          APPENDED,
        ],
      };
      strictEqual((await backend.count(resent, OPTIONS)).tokens, 1005);
    },
  );
});

Deno.test("AnchoredBackend.count() estimates the whole request without an anchor", async (t) => {
  const backend = new AnchoredBackend({ anchors: seeded() });
  const whole = (request: JsonObject) => {
    const tokens = roughEstimate(request);
    return { tokens, estimatedTokens: tokens };
  };

  await t.step("a first turn", async () => {
    const request = { model: "m", messages: [user("What is 2+2?")] };
    deepStrictEqual(await backend.count(request, OPTIONS), whole(request));
  });

  await t.step("another model", async () => {
    const request = extend({ ...TURN1, model: "other" }, assistant("Hi"));
    deepStrictEqual(await backend.count(request, OPTIONS), whole(request));
  });

  await t.step(
    "other tools: their definitions change every count",
    async () => {
      const tool = {
        type: "function",
        function: { name: "f", parameters: {} },
      };
      const request = extend(
        { ...TURN1, tools: [tool] },
        assistant("Hi"),
        APPENDED,
      );
      deepStrictEqual(await backend.count(request, OPTIONS), whole(request));
    },
  );

  await t.step("an edited earlier message", async () => {
    const request = {
      model: "m",
      messages: [{ role: "system", content: "Be verbose." }, user("Hi")],
    };
    deepStrictEqual(await backend.count(request, OPTIONS), whole(request));
  });

  await t.step("Completions and Responses requests", async () => {
    const prompt = { prompt: "Once upon a time" };
    deepStrictEqual(
      await backend.count(prompt, { ...OPTIONS, kind: "completion" }),
      whole(prompt),
    );
    const input = { instructions: "Be brief.", input: "Hello there" };
    deepStrictEqual(
      await backend.count(input, { ...OPTIONS, kind: "responses" }),
      whole(input),
    );
  });
});

Deno.test("AnchoredBackend with budget() keeps a margin only on the estimated part", async (t) => {
  const anchors = seeded(TURN1, 20000, 3000);
  const turn2 = extend(TURN1, assistant("Hello!"), APPENDED);

  await t.step("margin = the 5 estimated tokens, not F", async () => {
    const result = await budget(turn2, {
      window: W,
      contextLength: C,
      backend: new AnchoredBackend({ anchors }),
    });
    strictEqual(result.source, "usage-anchor");
    strictEqual(result.promptTokens, 23005);
    strictEqual(result.maxTokens, W - 23005 - 5);
  });

  await t.step("margin = F when more than F is estimated", async () => {
    const big = extend(TURN1, assistant("Hello!"), user("x".repeat(8000)));
    const result = await budget(big, {
      window: W,
      contextLength: C,
      backend: new AnchoredBackend({ anchors }),
    });
    strictEqual(result.promptTokens, 23000 + 2000);
    strictEqual(result.maxTokens, W - 25000 - 1024);
  });

  await t.step(
    "no margin when the appended part is counted exactly",
    async () => {
      const result = await budget(turn2, {
        window: W,
        contextLength: C,
        backend: new AnchoredBackend({
          anchors,
          count: new FakeBackend({ count: 12 }),
        }),
      });
      strictEqual(result.promptTokens, 23012);
      strictEqual(result.maxTokens, W - 23012);
    },
  );

  await t.step("a first turn keeps a margin of min(F, estimate)", async () => {
    const request = { model: "m", messages: [user("x".repeat(400))] };
    const result = await budget(request, {
      window: W,
      contextLength: C,
      backend: new AnchoredBackend({ anchors }),
    });
    strictEqual(result.promptTokens, 100);
    strictEqual(result.maxTokens, W - 100 - 100);
  });
});

Deno.test("AnchoredBackend counts the appended part with its exact counter", async (t) => {
  const turn2 = extend(
    { ...TURN1, tools: [{ type: "function", function: { name: "f" } }] },
    assistant("Hello!"),
    APPENDED,
  );
  const anchors = seeded({ ...TURN1, tools: turn2.tools } as JsonObject);

  await t.step("only the appended messages, without the tools", async () => {
    const exact = new FakeBackend({ count: 9 });
    const backend = new AnchoredBackend({ anchors, count: exact });
    deepStrictEqual(await backend.count(turn2, OPTIONS), {
      tokens: 1009,
      estimatedTokens: 0,
    });
    deepStrictEqual(exact.calls, [{ model: "m", messages: [APPENDED] }]);
  });

  await t.step(
    "an estimated part of the counter's result stays estimated",
    async () => {
      const backend = new AnchoredBackend({
        anchors,
        count: new FakeBackend({ count: { tokens: 9, estimatedTokens: 4 } }),
      });
      deepStrictEqual(await backend.count(turn2, OPTIONS), {
        tokens: 1009,
        estimatedTokens: 4,
      });
    },
  );

  await t.step("the whole request when there is no anchor", async () => {
    const exact = new FakeBackend({ count: 77 });
    const backend = new AnchoredBackend({
      anchors: new AnchorStore(),
      count: exact,
    });
    deepStrictEqual(await backend.count(turn2, OPTIONS), {
      tokens: 77,
      estimatedTokens: 0,
    });
    deepStrictEqual(exact.calls, [turn2]);
  });

  await t.step(
    "a failing or invalid counter leaves the part to the estimator",
    async () => {
      await using logs = await captureLogs();
      for (
        const count of [
          new FakeBackend({ error: new CountError("down") }),
          new FakeBackend({ count: -1 }),
          new FakeBackend({ error: new TemplateRejectedError() }),
        ]
      ) {
        const backend = new AnchoredBackend({ anchors, count });
        deepStrictEqual(await backend.count(turn2, OPTIONS), {
          tokens: 1005,
          estimatedTokens: 5,
        });
      }
      strictEqual(
        logs.lines.filter((line) => line.includes(" warning ")).length,
        3,
      );
    },
  );

  await t.step(
    "a template rejecting the whole request is passed on",
    async () => {
      const backend = new AnchoredBackend({
        anchors: new AnchorStore(),
        count: new FakeBackend({ error: new TemplateRejectedError() }),
      });
      await rejects(backend.count(turn2, OPTIONS), TemplateRejectedError);
      const result = await budget(turn2, {
        window: W,
        contextLength: C,
        backend,
      });
      strictEqual(result.action, "unchanged");
    },
  );

  await t.step(
    "clearCache() clears the counter's cache and keeps the anchors",
    async () => {
      let cleared = 0;
      const exact = new FakeBackend({ count: 1 });
      exact.clearCache = () => {
        cleared++;
        return Promise.resolve();
      };
      await new AnchoredBackend({ anchors, count: exact }).clearCache();
      strictEqual(cleared, 1);
      strictEqual(anchors.size, 1);
    },
  );
});

Deno.test("AnchoredBackend.count() fails with a CountError, and budget() falls back", async (t) => {
  const turn2 = extend(TURN1, assistant("Hello!"), APPENDED);

  await t.step("an estimator that throws or answers NaN", async () => {
    for (
      const estimate of [
        () => {
          throw new Error("estimator bug");
        },
        () => NaN,
      ]
    ) {
      const backend = new AnchoredBackend({ anchors: seeded(), estimate });
      await rejects(backend.count(turn2, OPTIONS), CountError);
      const result = await budget(turn2, {
        window: W,
        contextLength: C,
        backend,
      });
      strictEqual(result.source, "rough-fallback");
    }
  });

  await t.step("an aborted count", async () => {
    const backend = new AnchoredBackend({ anchors: seeded() });
    const controller = new AbortController();
    controller.abort();
    await rejects(
      backend.count(turn2, { ...OPTIONS, signal: controller.signal }),
      CountError,
    );
  });

  await t.step("an invalid context length", async () => {
    const backend = new AnchoredBackend({ anchors: seeded() });
    await rejects(backend.count(turn2, { contextLength: 0 }), RangeError);
  });
});

Deno.test("AnchoredBackend uses its estimator on the appended messages only", async () => {
  const seen: JsonObject[] = [];
  const backend = new AnchoredBackend({
    anchors: seeded(),
    estimate: (request) => {
      seen.push(request);
      return 2.5;
    },
  });
  const turn2 = extend(
    { ...TURN1, chat_template_kwargs: { enable_thinking: false } },
    assistant("Hello!"),
    APPENDED,
  );
  // The kwargs are not in the anchor's key, so the anchor still matches.
  deepStrictEqual(await backend.count(turn2, OPTIONS), {
    tokens: 1003,
    estimatedTokens: 3,
  });
  deepStrictEqual(seen, [{
    model: "m",
    messages: [APPENDED],
    chat_template_kwargs: { enable_thinking: false },
  }]);
});

Deno.test("new AnchoredBackend() validates its options", () => {
  const anchors = new AnchorStore();
  for (
    const options of [
      undefined,
      {},
      { anchors: {} },
      { anchors, estimate: 3 },
      { anchors, count: {} },
    ]
  ) {
    throws(
      () => new AnchoredBackend(options as never),
      (error: unknown) =>
        error instanceof TypeError &&
        /^Cannot create the anchored backend as '(anchors|estimate|count)'/
          .test(error.message),
    );
  }
  strictEqual(new AnchoredBackend({ anchors }).source, "usage-anchor");
  strictEqual(new AnchoredBackend({ anchors }).anchors, anchors);
});

Deno.test("recordResponseUsage() records under the key the backend looks up", async () => {
  const anchors = new AnchorStore();
  const request = { ...TURN1, extra_body: { model: "effective" } };
  strictEqual(recordResponseUsage(anchors, request, {}), false);
  strictEqual(
    recordResponseUsage(anchors, { model: "m", messages: [] }, {
      usage: { prompt_tokens: 1, completion_tokens: 1 },
    }),
    false,
  );
  strictEqual(
    recordResponseUsage(anchors, request, {
      usage: { prompt_tokens: 50, completion_tokens: 7 },
    }),
    true,
  );
  const backend = new AnchoredBackend({ anchors });
  const next = extend(request, assistant("Hi"), user("More"));
  strictEqual((await backend.count(next, OPTIONS)).tokens, 58);
  // Under another effective model, no anchor.
  const other = { ...next, extra_body: { model: "m2" } };
  strictEqual(
    (await backend.count(other, OPTIONS)).tokens,
    roughEstimate(other),
  );
});

Deno.test("anchoredFromConfig() bounds its store by INCONTEXT_ANCHOR_ENTRIES", () => {
  const config = loadConfig({
    INCONTEXT_TOKENIZER_URL: "http://127.0.0.1:8000/tokenize",
    INCONTEXT_ANCHOR_ENTRIES: "2",
  });
  const backend = anchoredFromConfig(config);
  for (let i = 0; i < 5; i++) {
    recordResponseUsage(backend.anchors, {
      model: "m",
      messages: [user(`${i}`)],
    }, {
      usage: { prompt_tokens: i, completion_tokens: 1 },
    });
  }
  strictEqual(backend.anchors.size, 2);
  // Each call builds its own store: the registry keeps the one instance.
  ok(anchoredFromConfig(config).anchors !== backend.anchors);
});

Deno.test("createProxyHandler() records usage into the store it is given", async (t) => {
  const upstream = createFakeUpstreamHandler({ maxModelLen: C });
  const anchors = new AnchorStore();
  const backend = new AnchoredBackend({ anchors });
  const proxy = createProxyHandler({
    upstream: "http://upstream.test",
    window: W,
    contextLength: C,
    backend,
    anchors,
    fetch: upstream.fetch,
  });
  const post = async (body: JsonObject) => {
    const response = await proxy(
      new Request("http://proxy.test/v1/chat/completions", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
      }),
    );
    return { response, text: await response.text() };
  };

  await t.step("a JSON response", async () => {
    const first = await post(TURN1);
    strictEqual(anchors.size, 1);
    const usage = JSON.parse(first.text).usage;
    const turn2 = extend(TURN1, assistant("Noted: 2 messages."), user("More"));
    const second = await post(turn2);
    strictEqual(
      second.response.headers.get("x-incontext-source"),
      "usage-anchor",
    );
    strictEqual(
      Number(second.response.headers.get("x-incontext-prompt-tokens")),
      usage.prompt_tokens + usage.completion_tokens + 1,
    );
    strictEqual(anchors.size, 2);
  });

  await t.step("a stream with include_usage", async () => {
    anchors.clear();
    await post({
      ...TURN1,
      stream: true,
      stream_options: { include_usage: true },
    });
    strictEqual(anchors.size, 1);
  });

  await t.step("the store must be an AnchorStore", () => {
    throws(
      () =>
        createProxyHandler({
          upstream: "http://upstream.test",
          window: W,
          contextLength: C,
          backend,
          anchors: {} as AnchorStore,
        }),
      TypeError,
    );
  });
});

Deno.test("budgetedFetch() with anchors records usage the anchored backend counts from", async (t) => {
  const upstream = createFakeUpstreamHandler({ maxModelLen: C });
  const anchors = new AnchorStore();
  const fetch = budgetedFetch(upstream.fetch, {
    window: W,
    contextLength: C,
    backend: new AnchoredBackend({ anchors }),
    anchors,
  });
  const post = (body: unknown, path = "/v1/chat/completions") =>
    fetch(`http://upstream.test${path}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });

  await t.step(
    "a JSON response is recorded once read, bytes unchanged",
    async () => {
      const response = await post(TURN1);
      strictEqual(anchors.size, 0);
      const text = await response.text();
      strictEqual(anchors.size, 1);
      const body = JSON.parse(text);
      strictEqual(body.choices[0].message.content, "Noted: 2 messages.");
      const before = upstream.requests.length;
      const next = extend(TURN1, body.choices[0].message, user("More"));
      const second = await post(next);
      await second.body?.cancel();
      const sent = upstream.requests[before]!.body as JsonObject;
      strictEqual(
        sent.max_tokens,
        W - (body.usage.prompt_tokens + body.usage.completion_tokens + 1) - 1,
      );
    },
  );

  await t.step(
    "a stream with include_usage is recorded at its end",
    async () => {
      anchors.clear();
      const response = await post({
        ...TURN1,
        stream: true,
        stream_options: { include_usage: true },
      });
      const text = await response.text();
      ok(text.includes('"usage"') && text.endsWith("data: [DONE]\n\n"));
      strictEqual(anchors.size, 1);
    },
  );

  await t.step(
    "failed responses and other endpoints are not recorded",
    async () => {
      anchors.clear();
      upstream.fault = "http-500";
      await (await post(TURN1)).text();
      upstream.fault = "none";
      await (await post({ prompt: "Once" }, "/v1/completions")).text();
      strictEqual(anchors.size, 0);
    },
  );

  await t.step(
    "the store serves as the anchor when the backend fails",
    async () => {
      const store = seeded(TURN1, 20000, 3000);
      const sent: JsonObject[] = [];
      const failing = budgetedFetch((_input, init) => {
        sent.push(JSON.parse(String(init?.body)));
        return Promise.resolve(new Response("{}"));
      }, {
        window: W,
        contextLength: C,
        backend: new FakeBackend({ error: new CountError("down") }),
        anchors: store,
      });
      await failing("http://h/v1/chat/completions", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(extend(TURN1, assistant("Hi"), user("More"))),
      });
      // 23000 anchored + "More" estimated at 1, which keeps a margin of min(F, 1).
      strictEqual(sent[0]!.max_tokens, W - 23001 - 1);
    },
  );

  await t.step("the store must be an AnchorStore", () => {
    throws(
      () =>
        budgetedFetch(upstream.fetch, {
          window: W,
          contextLength: C,
          backend: new FakeBackend(),
          anchors: {} as AnchorStore,
        }),
      TypeError,
    );
  });
});

async function runConformance(
  t: Deno.TestContext,
  options: BackendConformanceOptions,
): Promise<void> {
  for (const c of backendConformanceCases(options)) {
    await t.step({ name: c.name, ignore: c.skip !== undefined, fn: c.run });
  }
}

const CONFORMANCE_REQUEST: JsonObject = {
  model: "conformance-model",
  messages: [
    { role: "system", content: "You are a terse assistant." },
    { role: "user", content: `Say hello. ${CONFORMANCE_MARKER}` },
  ],
};

/** A store seeded the way users seed it: the request sent once through budgetedFetch to an upstream. */
async function seededThroughUpstream(): Promise<AnchorStore> {
  const anchors = new AnchorStore();
  const upstream = createFakeUpstreamHandler({ maxModelLen: C });
  const fetch = budgetedFetch(upstream.fetch, {
    window: W,
    contextLength: C,
    backend: new AnchoredBackend({ anchors }),
    anchors,
  });
  await (await fetch("http://upstream.test/v1/chat/completions", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(CONFORMANCE_REQUEST),
  })).text();
  strictEqual(anchors.size, 1);
  return anchors;
}

const failingEstimate = () => {
  throw new CountError("estimate failed");
};

Deno.test("conformance: anchored over a store seeded through an upstream", async (t) => {
  const anchors = await seededThroughUpstream();
  await runConformance(t, {
    create: () => new AnchoredBackend({ anchors }),
    // A missing anchor is estimated, not failed: only a failing estimate of
    // what the store does not cover fails a count.
    createFailing: () =>
      new AnchoredBackend({
        anchors: new AnchorStore(),
        estimate: failingEstimate,
      }),
    contextLength: C,
    request: CONFORMANCE_REQUEST,
  });
});

Deno.test("conformance: anchored with an exact counter against the vLLM protocol server", async (t) => {
  const anchors = await seededThroughUpstream();
  await using server = await serveFakeVllmTokenizer({ maxModelLen: C });
  await using failing = await serveFakeVllmTokenizer({
    maxModelLen: C,
    fault: "http-500",
  });
  await runConformance(t, {
    create: () =>
      new AnchoredBackend({
        anchors,
        count: new VllmBackend({ url: server.url, cache: null }),
      }),
    createFailing: () =>
      new AnchoredBackend({
        anchors: new AnchorStore(),
        count: new VllmBackend({ url: failing.url, cache: null }),
        estimate: failingEstimate,
      }),
    contextLength: C,
    request: CONFORMANCE_REQUEST,
  });
});
