// Covers: src/proxy/verification.ts, src/core/backend_chain.ts
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import { dirname } from "node:path";
import { budget, type CountCheck, CountError } from "../../mod.ts";
import { createCountCache } from "../../src/cache/mod.ts";
import { VllmBackend } from "../../src/backends/vllm/mod.ts";
import { LocalBackend } from "../../src/backends/local/mod.ts";
import { BackendChain, createProxyHandler } from "../../src/proxy/mod.ts";
import { CountVerification } from "../../src/proxy/verification.ts";
import {
  createFakeUpstreamHandler,
  FakeBackend,
  serveFakeUpstream,
} from "../../src/testing/mod.ts";
import { captureLogs } from "../_kit/log_capture.ts";
import { MODEL_FILES } from "../_kit/model_files.ts";
import { C, postJson, proxyFixture, W } from "../_kit/proxy_fixture.ts";
import { until } from "../_kit/hang.ts";

const chat = (content: string, model = "m") => ({
  model,
  messages: [{ role: "user", content }],
});

const VERIFICATIONS = "incontext_count_verifications_total";

/** The value of one series of the proxy's metrics (0 when absent). */
async function metric(url: string, labels: string): Promise<number> {
  const text = await (await fetch(`${url}/incontext/metrics`)).text();
  const line = text.split("\n").find((l) =>
    l.startsWith(`${VERIFICATIONS}{${labels}} `)
  );
  return line === undefined ? 0 : Number(line.split(" ").at(-1));
}

/** What `/incontext/context` says of the counts checked. */
async function verification(url: string) {
  return (await (await fetch(`${url}/incontext/context`)).json()).verification;
}

/** Sends a chat request through the proxy and reads its answer whole. */
async function ask(
  url: string,
  body: Record<string, unknown>,
  path = "/v1/chat/completions",
): Promise<{ status: number; text: string }> {
  const response = await postJson(`${url}${path}`, body);
  return { status: response.status, text: await response.text() };
}

Deno.test("the proxy verifies an exact count against its response's usage, streamed and not", async (t) => {
  await using proxy = await proxyFixture();
  await t.step("a JSON answer", async () => {
    strictEqual((await ask(proxy.url, chat("one"))).status, 200);
    strictEqual(await metric(proxy.url, 'model="m",result="equal"'), 1);
  });
  await t.step("a stream that reports usage at its end", async () => {
    const streamed = await ask(proxy.url, {
      ...chat("two"),
      stream: true,
      stream_options: { include_usage: true },
    });
    ok(streamed.text.includes('"usage"'), streamed.text);
    await until(
      async () => await metric(proxy.url, 'model="m",result="equal"') === 2,
      "the streamed usage checked",
    );
  });
  await t.step("completions and Responses", async () => {
    await ask(proxy.url, { model: "m", prompt: "Once" }, "/v1/completions");
    await ask(proxy.url, { model: "m", input: "Hi" }, "/v1/responses");
    strictEqual(await metric(proxy.url, 'model="m",result="equal"'), 4);
  });
  await t.step("a stream without usage checks nothing", async () => {
    const streamed = await ask(proxy.url, { ...chat("three"), stream: true });
    ok(!streamed.text.includes('"usage"'));
    strictEqual(await metric(proxy.url, 'model="m",result="equal"'), 4);
  });
  await t.step("/incontext/context shows the verified rate", async () => {
    deepStrictEqual(await verification(proxy.url), {
      checked: 4,
      equal: 4,
      models: [{
        model: "m",
        checked: 4,
        equal: 4,
        rate: 1,
        source: "vllm-tokenize",
        lastDiffer: null,
      }],
    });
    strictEqual(await metric(proxy.url, 'model="m",result="differ"'), 0);
  });
});

Deno.test("the proxy counts no verification for a request the upstream refused", async () => {
  await using proxy = await proxyFixture();
  for (const fault of ["http-500", "http-503", "non-json"] as const) {
    proxy.upstream.fault = fault;
    await ask(proxy.url, chat("refused"));
  }
  proxy.upstream.fault = "none";
  deepStrictEqual(await verification(proxy.url), {
    checked: 0,
    equal: 0,
    models: [],
  });
  const text = await (await fetch(`${proxy.url}/incontext/metrics`)).text();
  ok(!text.includes(`${VERIFICATIONS}{`), text);
  await ask(proxy.url, chat("answered"));
  strictEqual((await verification(proxy.url)).checked, 1);
});

Deno.test("the proxy counts no verification for an error answer, even one that carries usage", async () => {
  const proxy = createProxyHandler({
    upstream: "http://upstream.test",
    window: W,
    contextLength: C,
    backend: new FakeBackend({ count: 5 }),
    fetch: () =>
      Promise.resolve(Response.json({
        error: { message: "refused", type: "BadRequestError", code: 400 },
        usage: { prompt_tokens: 5, completion_tokens: 0 },
      }, { status: 400 })),
  });
  const response = await proxy(
    new Request("http://proxy.test/v1/chat/completions", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(chat("refused")),
    }),
  );
  strictEqual(response.status, 400);
  await response.text();
  const view = await (await proxy(
    new Request("http://proxy.test/incontext/context"),
    { remoteAddr: { hostname: "127.0.0.1" } },
  )).json();
  strictEqual(view.verification.checked, 0);
});

Deno.test("the proxy never counts an estimate as verified", async (t) => {
  for (
    const [what, backend] of [
      ["a rough estimate", new FakeBackend({ error: new CountError("down") })],
      [
        "a count with an estimated part",
        new FakeBackend({ count: { tokens: 20, estimatedTokens: 4 } }),
      ],
    ] as const
  ) {
    await t.step(what, async () => {
      await using proxy = await proxyFixture({ backend });
      const answered = await ask(proxy.url, chat("estimated"));
      ok(answered.text.includes('"usage"'));
      strictEqual((await verification(proxy.url)).checked, 0);
    });
  }
});

/** A fake backend that keeps the checks it hears. */
class HearingBackend extends FakeBackend {
  readonly checks: CountCheck[] = [];
  override countChecked(check: CountCheck): void {
    this.checks.push(check);
  }
}

Deno.test("the proxy reports a count the usage contradicts: metric, a warning per cause, context, backend", async () => {
  await using logs = await captureLogs();
  const backend = new HearingBackend({ count: 7, source: "wrong" });
  await using proxy = await proxyFixture({ backend });
  await ask(proxy.url, chat("canary one"));
  await ask(proxy.url, chat("canary two"));
  await ask(proxy.url, chat("canary three", "n"));
  strictEqual(await metric(proxy.url, 'model="m",result="differ"'), 2);
  strictEqual(await metric(proxy.url, 'model="n",result="differ"'), 1);
  strictEqual(await metric(proxy.url, 'model="m",result="equal"'), 0);
  // One cause (source wrong, too low): the first is a warning, the next
  // ones within the minute are logged at debug.
  const lines = logs.lines.filter((line) => line.includes("count differs"));
  strictEqual(lines.length, 3, lines.join("\n"));
  const warnings = lines.filter((line) =>
    line.startsWith("incontext.proxy warning count differs")
  );
  ok(warnings[0] === lines[0], lines.join("\n"));
  ok(lines[2]!.includes("model=n source=wrong counted=7"), lines[2]);
  const served = backend.checks[0]!.served;
  ok(served !== 7);
  ok(
    warnings[0]!.includes(
      `model=m source=wrong counted=7 usage=${served};`,
    ),
    warnings[0],
  );
  ok(!logs.lines.some((line) => line.includes("canary")), "no content");
  deepStrictEqual(backend.checks[0], {
    model: "m",
    source: "wrong",
    counted: 7,
    served,
  });
  const view = await verification(proxy.url);
  deepStrictEqual(view.models[0], {
    model: "m",
    checked: 2,
    equal: 0,
    rate: 0,
    source: "wrong",
    lastDiffer: {
      source: "wrong",
      counted: 7,
      served: backend.checks[1]!.served,
    },
  });
});

Deno.test("CountVerification warns of each cause once a minute at most, whatever the models clients name", async (t) => {
  await using logs = await captureLogs();
  let now = 0;
  const verification = new CountVerification({ now: () => now });
  const backend = new FakeBackend({ count: 7, source: "wrong" });
  const check = async (model: string, served: number) => {
    const result = await budget(chat("hi", model), {
      window: W,
      contextLength: C,
      backend,
    });
    verification.checkerFor(result, backend)!({
      promptTokens: served,
      completionTokens: 1,
    });
  };
  const warnings = () =>
    logs.lines.filter((line) =>
      line.startsWith("incontext.proxy warning count differs")
    );
  await t.step("1,000 models too low: one warning", async () => {
    for (let i = 0; i < 1000; i++) await check(`model-${i}`, 9);
    strictEqual(warnings().length, 1, warnings().join("\n"));
    ok(warnings()[0]!.includes("model=model-0 source=wrong counted=7 usage=9"));
    strictEqual(
      logs.lines.filter((l) => l.startsWith("incontext.proxy debug")).length,
      999,
    );
  });
  await t.step(
    "another cause, too high, has a warning of its own",
    async () => {
      await check("model-0", 5);
      strictEqual(warnings().length, 2);
      ok(warnings()[1]!.includes("counted=7 usage=5"), warnings()[1]);
    },
  );
  await t.step(
    "a minute later, one more, with how many came between",
    async () => {
      now = 59_999;
      await check("model-1000", 9);
      strictEqual(warnings().length, 2);
      now = 60_000;
      await check("model-1001", 9);
      strictEqual(warnings().length, 3);
      ok(
        warnings()[2]!.includes(
          "model=model-1001 source=wrong counted=7 usage=9; 1000 more of this source in this direction since the last warning",
        ),
        warnings()[2],
      );
    },
  );
  await t.step("the metrics count every difference", () => {
    const differ = verification.metricLines(true)
      .filter((line) => line.includes('result="differ"'))
      .reduce((sum, line) => sum + Number(line.split(" ").at(-1)), 0);
    strictEqual(differ, 1003);
    strictEqual(verification.totals().checked, 1003);
  });
});

Deno.test("the verification metric and view hide model names as /incontext/context does", async () => {
  const upstream = createFakeUpstreamHandler();
  const cache = createCountCache({ inProcess: true });
  const proxy = createProxyHandler({
    upstream: "http://upstream.test",
    window: W,
    contextLength: C,
    fetch: upstream.fetch,
    backend: new VllmBackend({
      url: "http://upstream.test/tokenize",
      fetch: upstream.fetch,
      cache,
    }),
  });
  const remote = { remoteAddr: { hostname: "10.0.0.5" } };
  const local = { remoteAddr: { hostname: "127.0.0.1" } };
  for (const model of ["acme/secret-a", "acme/secret-b"]) {
    const response = await proxy(
      new Request("http://proxy.test/v1/chat/completions", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(chat("hi", model)),
      }),
      remote,
    );
    await response.text();
  }
  const read = async (info: typeof remote, path: string) =>
    await (await proxy(new Request(`http://proxy.test${path}`), info)).text();
  const hidden = await read(remote, "/incontext/metrics");
  ok(
    hidden.includes(`${VERIFICATIONS}{model="model 2",result="equal"} 1`),
    hidden,
  );
  ok(!hidden.includes("secret"), hidden);
  const shown = await read(local, "/incontext/metrics");
  ok(
    shown.includes(`${VERIFICATIONS}{model="acme/secret-b",result="equal"} 1`),
  );
  const view = JSON.parse(await read(remote, "/incontext/context"));
  deepStrictEqual(
    view.verification.models.map((m: { model: string }) => m.model),
    view.decisions.map((d: { model: string }) => d.model),
  );
  await cache[Symbol.asyncDispose]();
});

const QWEN3 = dirname(
  MODEL_FILES.find((model) => model.family === "qwen3")!.tokenizerPath,
);

/**
 * A chain of the local backend on Qwen3's folder and vLLM's /tokenize on a
 * fake upstream that counts by its own rule, so that the two disagree.
 */
async function chainFixture(
  options: { fallbackTurns?: number; countTokens?: () => number } = {},
) {
  const local = new LocalBackend({ dir: QWEN3, cache: null });
  const cache = createCountCache({ inProcess: true });
  const upstream = await serveFakeUpstream({
    maxModelLen: C,
    ...(options.countTokens ? { countTokens: options.countTokens } : {}),
  });
  const vllm = new VllmBackend({ url: upstream.tokenizeUrl, cache });
  const chain = new BackendChain(
    [local, vllm],
    options.fallbackTurns === undefined
      ? {}
      : { fallbackTurns: options.fallbackTurns },
  );
  const proxy = createProxyHandler({
    upstream: upstream.url,
    window: W,
    contextLength: C,
    backend: chain,
    cache,
  });
  const server = Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen() {} },
    proxy,
  );
  const url = `http://127.0.0.1:${server.addr.port}`;
  return {
    url,
    local,
    chain,
    /** What the fake upstream's usage reports for `request`: its /tokenize count. */
    served: async (request: Record<string, unknown>): Promise<number> =>
      (await (await postJson(upstream.tokenizeUrl, request)).json()).count,
    /** The source of each decision so far. */
    sources: async (): Promise<string[]> =>
      (await (await fetch(`${url}/incontext/context`)).json()).decisions.map((
        d: { source: string },
      ) => d.source),
    async [Symbol.asyncDispose]() {
      await server.shutdown();
      await upstream[Symbol.asyncDispose]();
      await cache[Symbol.asyncDispose]();
      await local[Symbol.asyncDispose]();
    },
  };
}

const TURN = chat("Name three rivers of Europe, in one line each. ".repeat(3));

Deno.test("a local count the server's usage contradicts moves the model to vLLM's /tokenize", async (t) => {
  await using logs = await captureLogs();
  await using fixture = await chainFixture();
  const local = await fixture.local.count(TURN, { contextLength: C });
  ok(local !== await fixture.served(TURN), "the two counts differ");
  await t.step("the local count is caught and reported", async () => {
    await ask(fixture.url, TURN);
    strictEqual(await metric(fixture.url, 'model="m",result="differ"'), 1);
    const warning = logs.lines.find((l) => l.includes("count differs"));
    ok(
      warning?.includes(`model=m source=local-tokenizer counted=${local} `),
      warning,
    );
    const moves = logs.lines.filter((l) => l.includes("now counts with"));
    strictEqual(moves.length, 1);
    ok(moves[0]!.includes("model=m now counts with vllm-tokenize"), moves[0]);
  });
  await t.step("the next turns count with /tokenize, verified", async () => {
    await ask(fixture.url, TURN);
    await ask(fixture.url, TURN);
    deepStrictEqual(await fixture.sources(), [
      "local-tokenizer",
      "vllm-tokenize",
      "vllm-tokenize",
    ]);
    const view = await verification(fixture.url);
    strictEqual(view.models[0].equal, 2);
    strictEqual(view.models[0].checked, 3);
    strictEqual(view.models[0].source, "vllm-tokenize");
    deepStrictEqual(view.models[0].lastDiffer.source, "local-tokenizer");
    strictEqual(view.models[0].lastDiffer.counted, local);
  });
  await t.step("another model still counts locally", async () => {
    await ask(fixture.url, chat("Another question", "other"));
    strictEqual((await fixture.sources()).at(-1), "local-tokenizer");
  });
});

Deno.test("with fallbackTurns, the model counts locally again after that many verified turns", async () => {
  await using fixture = await chainFixture({ fallbackTurns: 2 });
  ok(
    await fixture.local.count(TURN, { contextLength: C }) !==
      await fixture.served(TURN),
  );
  for (let i = 0; i < 4; i++) await ask(fixture.url, TURN);
  deepStrictEqual(await fixture.sources(), [
    "local-tokenizer",
    "vllm-tokenize",
    "vllm-tokenize",
    "local-tokenizer",
  ]);
});

Deno.test("local counts the server confirms are verified, and the model stays local", async () => {
  const local = new LocalBackend({ dir: QWEN3, cache: null });
  const tokens = await local.count(TURN, { contextLength: C });
  await local[Symbol.asyncDispose]();
  await using fixture = await chainFixture({ countTokens: () => tokens });
  await ask(fixture.url, TURN);
  await ask(fixture.url, {
    ...TURN,
    stream: true,
    stream_options: { include_usage: true },
  });
  await until(
    async () => (await verification(fixture.url)).equal === 2,
    "both turns verified",
  );
  deepStrictEqual(await fixture.sources(), [
    "local-tokenizer",
    "local-tokenizer",
  ]);
  strictEqual(fixture.chain.backendFor("m").source, "local-tokenizer");
});
