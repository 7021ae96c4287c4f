import {
  deepStrictEqual,
  ok,
  rejects,
  strictEqual,
  throws,
} from "node:assert/strict";
import {
  createFakeVllmTokenizerHandler,
  type FakeVllmFault,
  serveFakeVllmTokenizer,
} from "../../src/testing/fake_vllm_server.ts";
import { until } from "../_kit/hang.ts";

const BODY = JSON.stringify({
  model: "m",
  messages: [{ role: "user", content: "Hello there" }],
});
function post(
  url: string,
  body = BODY,
  init: RequestInit = {},
): Promise<Response> {
  return fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body,
    ...init,
  });
}

Deno.test("serveFakeVllmTokenizer() answers in vLLM's wire shape", async (t) => {
  await using server = await serveFakeVllmTokenizer();

  await t.step("on port 0 of 127.0.0.1, at /tokenize", () => {
    const url = new URL(server.url);
    strictEqual(url.hostname, "127.0.0.1");
    strictEqual(url.pathname, "/tokenize");
    ok(Number(url.port) > 0);
  });

  await t.step("count, max_model_len, tokens and token_strs", async () => {
    const response = await post(server.url);
    strictEqual(response.status, 200);
    const body = await response.json();
    deepStrictEqual(Object.keys(body), [
      "count",
      "max_model_len",
      "tokens",
      "token_strs",
    ]);
    // The default rule: a quarter of the compact JSON of the messages.
    const messages = JSON.stringify(JSON.parse(BODY).messages);
    strictEqual(body.count, Math.ceil(messages.length / 4));
    strictEqual(body.max_model_len, 65536);
    strictEqual(body.tokens.length, body.count);
    strictEqual(body.token_strs, null);
  });

  await t.step("tools count too, and the text form is accepted", async () => {
    const withTools = {
      messages: [],
      tools: [{ type: "function", function: { name: "lookup" } }],
    };
    const counted = await (await post(server.url, JSON.stringify(withTools)))
      .json();
    strictEqual(
      counted.count,
      Math.ceil(("[]" + JSON.stringify(withTools.tools)).length / 4),
    );
    const prompt =
      await (await post(server.url, JSON.stringify({ prompt: "12345678" })))
        .json();
    strictEqual(prompt.count, 2);
  });

  await t.step("every request is recorded", () => {
    const first = server.requests[0]!;
    strictEqual(first.method, "POST");
    strictEqual(first.path, "/tokenize");
    strictEqual(first.search, "");
    strictEqual(first.text, BODY);
    deepStrictEqual(first.body, JSON.parse(BODY));
    strictEqual(first.headers["content-type"], "application/json");
    strictEqual(server.requests.length, 3);
  });

  await t.step("malformed requests get vLLM's error shape", async () => {
    const cases: [Promise<Response>, number][] = [
      [post(server.url, "{not json"), 400],
      [post(server.url, "[]"), 400],
      [post(server.url, JSON.stringify({ messages: "x" })), 400],
      [post(server.url.replace("/tokenize", "/v1/tokenize")), 404],
      [fetch(server.url), 405],
    ];
    for (const [responding, status] of cases) {
      const response = await responding;
      strictEqual(response.status, status);
      const body = await response.json();
      strictEqual(body.object, "error");
      strictEqual(body.code, status);
    }
  });
});

Deno.test("serveFakeVllmTokenizer() takes maxModelLen and countTokens", async () => {
  await using server = await serveFakeVllmTokenizer({
    maxModelLen: 4096,
    countTokens: (body) => (body.messages as unknown[]).length * 5000,
  });
  const body = await (await post(server.url)).json();
  strictEqual(body.count, 5000);
  strictEqual(body.max_model_len, 4096);
  strictEqual(body.tokens.length, 1024, "tokens are capped");
});

Deno.test("serveFakeVllmTokenizer() fails on demand", async (t) => {
  await using server = await serveFakeVllmTokenizer({
    maxModelLen: 100,
    countTokens: () => 7,
  });
  const answers: [FakeVllmFault, number, (text: string) => void][] = [
    [
      "http-500",
      500,
      (text) => ok(text.includes("Hello there"), "the error echoes the input"),
    ],
    ["non-json", 200, (text) => throws(() => JSON.parse(text))],
    ["non-object", 200, (text) => ok(Array.isArray(JSON.parse(text)))],
    ["invalid-count", 200, (text) => strictEqual(JSON.parse(text).count, "7")],
    ["missing-count", 200, (text) => ok(!("count" in JSON.parse(text)))],
    ["negative-count", 200, (text) => strictEqual(JSON.parse(text).count, -1)],
    [
      "fractional-count",
      200,
      (text) => strictEqual(JSON.parse(text).count, 7.5),
    ],
    [
      "invalid-max-model-len",
      200,
      (text) => strictEqual(JSON.parse(text).max_model_len, 0),
    ],
    [
      "wrong-max-model-len",
      200,
      (text) => strictEqual(JSON.parse(text).max_model_len, 200),
    ],
    ["none", 200, (text) => strictEqual(JSON.parse(text).count, 7)],
  ];
  for (const [fault, status, check] of answers) {
    await t.step(fault, async () => {
      server.fault = fault;
      const response = await post(server.url);
      strictEqual(response.status, status);
      check(await response.text());
    });
  }

  await t.step("refused: the URL points at a closed port", async () => {
    const live = server.url;
    server.fault = "refused";
    const refused = server.url;
    ok(refused !== live);
    await rejects(post(refused), TypeError);
    server.fault = "none";
    strictEqual(server.url, live);
  });

  await t.step("slow: held until the client gives up", async () => {
    server.fault = "slow";
    const before = server.requests.length;
    const giveUp = new AbortController();
    const responding = post(server.url, BODY, { signal: giveUp.signal });
    // The client gives up once the request is held, not after some time.
    await until(() => server.requests.length === before + 1, "the request");
    giveUp.abort(new DOMException("The client gave up", "TimeoutError"));
    await rejects(
      responding,
      (error: unknown) =>
        error instanceof DOMException && error.name === "TimeoutError",
    );
    strictEqual(server.requests.length, before + 1);
  });

  await t.step("an unknown fault is refused", () => {
    throws(() => server.fault = "flaky" as FakeVllmFault, RangeError);
  });
});

Deno.test("serveFakeVllmTokenizer() releases held requests when disposed", async () => {
  const server = await serveFakeVllmTokenizer({ fault: "slow" });
  const responding = post(server.url);
  await server[Symbol.asyncDispose]();
  // The held request ends with a 503, or with the connection when it never got in.
  const response = await responding.catch(() => undefined);
  await response?.body?.cancel();
  ok(response === undefined || response.status === 503);
  // Disposing twice is harmless.
  await server[Symbol.asyncDispose]();
});

Deno.test("createFakeVllmTokenizerHandler() works without a network", async (t) => {
  const fake = createFakeVllmTokenizerHandler({
    maxModelLen: 512,
    countTokens: () => 3,
  });

  await t.step("handler answers a Request", async () => {
    const response = await fake.handler(
      new Request("http://fake.test/tokenize?x=1", {
        method: "POST",
        body: BODY,
      }),
    );
    deepStrictEqual(await response.json(), {
      count: 3,
      max_model_len: 512,
      tokens: [1, 7920, 15839],
      token_strs: null,
    });
    strictEqual(fake.requests.at(-1)!.search, "?x=1");
  });

  await t.step("fetch hands requests to the handler", async () => {
    const response = await fake.fetch("http://fake.test/tokenize", {
      method: "POST",
      body: BODY,
    });
    strictEqual((await response.json()).count, 3);
    strictEqual(fake.requests.length, 2);
  });

  await t.step(
    "refused: fetch rejects with a TypeError and records nothing",
    async () => {
      fake.fault = "refused";
      await rejects(
        fake.fetch("http://fake.test/tokenize", { method: "POST", body: BODY }),
        TypeError,
      );
      strictEqual(fake.requests.length, 2);
    },
  );

  await t.step("slow: fetch rejects once its signal aborts", async () => {
    fake.fault = "slow";
    const controller = new AbortController();
    const responding = fake.fetch("http://fake.test/tokenize", {
      method: "POST",
      body: BODY,
      signal: controller.signal,
    });
    controller.abort();
    await rejects(
      responding,
      (error: unknown) =>
        error instanceof DOMException && error.name === "AbortError",
    );
  });

  await t.step(
    "slow: the handler holds until the options' signal aborts",
    async () => {
      const release = new AbortController();
      const held = createFakeVllmTokenizerHandler({
        fault: "slow",
        signal: release.signal,
      });
      const responding = held.handler(
        new Request("http://fake.test/tokenize", {
          method: "POST",
          body: BODY,
        }),
      );
      release.abort();
      strictEqual((await responding).status, 503);
    },
  );

  await t.step("bad options throw", () => {
    throws(
      () => createFakeVllmTokenizerHandler({ maxModelLen: 0 }),
      RangeError,
    );
    throws(
      () => createFakeVllmTokenizerHandler({ maxModelLen: 1.5 }),
      RangeError,
    );
    throws(
      () => createFakeVllmTokenizerHandler({ fault: "bogus" as FakeVllmFault }),
      RangeError,
    );
  });
});
