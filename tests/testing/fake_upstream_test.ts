import {
  deepStrictEqual,
  notStrictEqual,
  ok,
  rejects,
  strictEqual,
  throws,
} from "node:assert/strict";
import OpenAI from "openai";
import {
  createFakeUpstreamHandler,
  type FakeUpstreamFault,
  type FakeUpstreamHandler,
  serveFakeUpstream,
} from "../../src/testing/fake_upstream.ts";
import { VllmBackend } from "../../src/backends/vllm/mod.ts";
import { until } from "../_kit/hang.ts";

const MESSAGES = [
  { role: "system", content: "You are terse." },
  { role: "user", content: "What is the capital of France?" },
];
const TOOLS = [{
  type: "function",
  function: { name: "lookup", parameters: { type: "object" } },
}];
const CHAT = { model: "m", messages: MESSAGES, tools: TOOLS };

function post(
  fake: FakeUpstreamHandler,
  path: string,
  body: unknown,
  init: RequestInit = {},
): Promise<Response> {
  return fake.fetch(`http://fake.test${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
    ...init,
  });
}

function sdk(fetch?: typeof globalThis.fetch, baseURL = "http://fake.test/v1") {
  return new OpenAI({
    baseURL,
    apiKey: "sk-test",
    maxRetries: 0,
    ...(fetch === undefined ? {} : { fetch }),
  });
}

/** A promise with its resolver, without Promise.withResolvers. */
function deferred<T = void>(): {
  promise: Promise<T>;
  resolve(value: T): void;
} {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((done) => resolve = done);
  return { promise, resolve };
}

/** Reads a body to the end, or the error that ended it. */
async function drain(response: Response): Promise<string | Error> {
  try {
    return await response.text();
  } catch (error) {
    return error as Error;
  }
}

Deno.test("createFakeUpstreamHandler() counts usage as its /tokenize does", async (t) => {
  await t.step(
    "chat usage.prompt_tokens equals the chat form's count",
    async () => {
      const fake = createFakeUpstreamHandler();
      const chat = await (await post(fake, "/v1/chat/completions", CHAT))
        .json();
      const tokenized = await (await post(fake, "/tokenize", {
        ...CHAT,
        add_generation_prompt: true,
      })).json();
      ok(tokenized.count > 0);
      strictEqual(chat.usage.prompt_tokens, tokenized.count);
      // The default rule: a quarter of the compact JSON of messages and tools.
      strictEqual(
        tokenized.count,
        Math.ceil(
          (JSON.stringify(MESSAGES) + JSON.stringify(TOOLS)).length / 4,
        ),
      );
      strictEqual(chat.choices[0].message.content, "Noted: 2 messages.");
      strictEqual(chat.usage.completion_tokens, Math.ceil(18 / 4));
      strictEqual(
        chat.usage.total_tokens,
        chat.usage.prompt_tokens + chat.usage.completion_tokens,
      );
    },
  );

  await t.step("and equals what VllmBackend counts against it", async () => {
    const fake = createFakeUpstreamHandler({ maxModelLen: 8192 });
    const backend = new VllmBackend({
      url: "http://fake.test/tokenize",
      fetch: fake.fetch,
      cache: null,
    });
    const counted = await backend.count(CHAT, { contextLength: 8192 });
    const chat = await (await post(fake, "/v1/chat/completions", CHAT)).json();
    strictEqual(chat.usage.prompt_tokens, counted);
  });

  await t.step(
    "a custom countTokens sees /tokenize's chat and text forms",
    async () => {
      const seen: unknown[] = [];
      const fake = createFakeUpstreamHandler({
        countTokens(body) {
          seen.push(body);
          return 321;
        },
      });
      const chat = await (await post(fake, "/v1/chat/completions", {
        ...CHAT,
        temperature: 0,
        max_tokens: 10,
      })).json();
      strictEqual(chat.usage.prompt_tokens, 321);
      deepStrictEqual(seen[0], { ...CHAT, add_generation_prompt: true });
      const text = await (await post(fake, "/v1/completions", {
        model: "m",
        prompt: "Once upon",
      })).json();
      strictEqual(text.usage.prompt_tokens, 321);
      deepStrictEqual(seen[1], { model: "m", prompt: "Once upon" });
    },
  );

  await t.step(
    "Responses count instructions and input as chat messages",
    async () => {
      const fake = createFakeUpstreamHandler();
      const response = await (await post(fake, "/v1/responses", {
        model: "m",
        instructions: "You are terse.",
        input: "What is the capital of France?",
      })).json();
      const tokenized = await (await post(fake, "/tokenize", {
        model: "m",
        messages: MESSAGES,
      })).json();
      strictEqual(response.usage.input_tokens, tokenized.count);
      strictEqual(response.output[0].content[0].text, "Noted: 1 input items.");
    },
  );
});

Deno.test("createFakeUpstreamHandler() serves the openai SDK", async (t) => {
  const fake = createFakeUpstreamHandler({ model: "served" });
  const client = sdk(fake.fetch);

  await t.step("a chat completion", async () => {
    const chat = await client.chat.completions.create({
      model: "m",
      messages: [{ role: "user", content: "Hi" }],
    });
    strictEqual(chat.object, "chat.completion");
    strictEqual(chat.model, "m");
    strictEqual(chat.choices[0]?.message.content, "Noted: 1 messages.");
    strictEqual(chat.choices[0]?.finish_reason, "stop");
    ok(chat.usage !== undefined && chat.usage.prompt_tokens > 0);
  });

  await t.step(
    "a streamed chat completion ends with a usage chunk",
    async () => {
      const stream = await client.chat.completions.create({
        model: "m",
        messages: [{ role: "user", content: "Hi" }],
        stream: true,
        stream_options: { include_usage: true },
      });
      const chunks = [];
      for await (const chunk of stream) chunks.push(chunk);
      const last = chunks.at(-1)!;
      deepStrictEqual(last.choices, []);
      strictEqual(last.usage?.completion_tokens, Math.ceil(18 / 4));
      ok(chunks.slice(0, -1).every((chunk) => !chunk.usage));
      strictEqual(chunks[0]?.choices[0]?.delta.role, "assistant");
      const text = chunks.map((chunk) => chunk.choices[0]?.delta.content ?? "");
      strictEqual(text.join(""), "Noted: 1 messages.");
      ok(chunks.filter((chunk) => chunk.choices[0]?.delta.content).length > 1);
      strictEqual(chunks.at(-2)?.choices[0]?.finish_reason, "stop");
    },
  );

  await t.step("without include_usage, no usage chunk", async () => {
    const stream = await client.chat.completions.create({
      model: "m",
      messages: [{ role: "user", content: "Hi" }],
      stream: true,
    });
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);
    ok(chunks.every((chunk) => chunk.choices.length === 1 && !chunk.usage));
  });

  await t.step("a completion, plain and streamed", async () => {
    const completion = await client.completions.create({
      model: "m",
      prompt: "Once upon a time",
    });
    strictEqual(completion.choices[0]?.text, "Noted: 16 characters.");
    strictEqual(completion.usage?.prompt_tokens, 4);
    const stream = await client.completions.create({
      model: "m",
      prompt: "Once upon a time",
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = "";
    let usage;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.text ?? "";
      usage = chunk.usage ?? usage;
    }
    strictEqual(text, "Noted: 16 characters.");
    strictEqual(usage?.prompt_tokens, 4);
  });

  await t.step("a response, plain and streamed", async () => {
    const response = await client.responses.create({
      model: "m",
      input: "Hi",
      max_output_tokens: 100,
    });
    strictEqual(response.output_text, "Noted: 1 input items.");
    strictEqual(response.status, "completed");
    ok(response.usage !== null && response.usage!.input_tokens > 0);
    strictEqual(response.usage?.output_tokens, Math.ceil(21 / 4));
    const stream = await client.responses.create({
      model: "m",
      input: "Hi",
      stream: true,
    });
    const types: string[] = [];
    let text = "";
    let completed;
    for await (const event of stream) {
      types.push(event.type);
      if (event.type === "response.output_text.delta") text += event.delta;
      if (event.type === "response.completed") completed = event.response;
    }
    strictEqual(types[0], "response.created");
    strictEqual(types.at(-1), "response.completed");
    strictEqual(text, "Noted: 1 input items.");
    strictEqual(completed?.usage?.output_tokens, response.usage?.output_tokens);
  });

  await t.step("the SDK's helper stream accumulates the response", async () => {
    const stream = client.responses.stream({ model: "m", input: "Hi" });
    const final = await stream.finalResponse();
    strictEqual(final.output_text, "Noted: 1 input items.");
  });

  await t.step("GET /v1/models reports max_model_len", async () => {
    const models = await (await fake.fetch("http://fake.test/v1/models"))
      .json();
    deepStrictEqual(models.object, "list");
    const [model] = models.data;
    strictEqual(model.id, "served");
    strictEqual(model.owned_by, "vllm");
    strictEqual(model.max_model_len, 65536);
    const listed = [];
    for await (const entry of client.models.list()) listed.push(entry.id);
    deepStrictEqual(listed, ["served"]);
  });
});

Deno.test("createFakeUpstreamHandler() checks lengths as vLLM does", async (t) => {
  const fake = createFakeUpstreamHandler({
    maxModelLen: 100,
    countTokens: () => 60,
  });

  await t.step(
    "prompt + max_tokens > max_model_len answers vLLM's 400",
    async () => {
      const response = await post(fake, "/v1/chat/completions", {
        ...CHAT,
        max_tokens: 41,
      });
      strictEqual(response.status, 400);
      deepStrictEqual(await response.json(), {
        error: {
          message:
            "This model's maximum context length is 100 tokens. However, you requested 41 output tokens and your prompt contains at least 60 input tokens, for a total of at least 101 tokens. Please reduce the length of the input prompt or the number of requested output tokens.",
          type: "BadRequestError",
          param: "input_tokens",
          code: 400,
        },
      });
    },
  );

  await t.step(
    "exactly max_model_len fits; max_completion_tokens wins",
    async () => {
      const fits = await post(fake, "/v1/chat/completions", {
        ...CHAT,
        max_tokens: 41,
        max_completion_tokens: 40,
      });
      strictEqual(fits.status, 200);
      await fits.body?.cancel();
      const responses = await post(fake, "/v1/responses", {
        model: "m",
        input: "Hi",
        max_output_tokens: 41,
      });
      strictEqual(responses.status, 400);
      await responses.body?.cancel();
    },
  );

  await t.step("the SDK raises BadRequestError with the message", async () => {
    const error = await sdk(fake.fetch).completions.create({
      model: "m",
      prompt: "Hi",
      max_tokens: 1000,
    }).catch((error: unknown) => error);
    ok(error instanceof OpenAI.BadRequestError);
    strictEqual(error.status, 400);
    ok(error.message.includes("maximum context length is 100 tokens"));
  });

  await t.step(
    "a prompt that leaves no room answers 400 without a cap",
    async () => {
      const tight = createFakeUpstreamHandler({
        maxModelLen: 60,
        countTokens: () => 60,
      });
      const response = await post(tight, "/v1/chat/completions", CHAT);
      strictEqual(response.status, 400);
      const { error } = await response.json();
      strictEqual(
        error.message,
        "This model's maximum context length is 60 tokens. However, your request has 60 input tokens. Please reduce the length of the input messages.",
      );
      strictEqual(error.param, "input_tokens");
    },
  );

  await t.step(
    "a small cap cuts the reply with finish_reason length",
    async () => {
      const chat = await (await post(fake, "/v1/chat/completions", {
        ...CHAT,
        max_tokens: 2,
      })).json();
      strictEqual(chat.choices[0].message.content, "Noted: 2");
      strictEqual(chat.choices[0].finish_reason, "length");
      strictEqual(chat.usage.completion_tokens, 2);
    },
  );

  await t.step("malformed requests answer 400", async () => {
    for (
      const [path, body] of [
        ["/v1/chat/completions", { model: "m" }],
        ["/v1/chat/completions", { ...CHAT, max_tokens: 0 }],
        ["/v1/completions", { model: "m", prompt: 7 }],
        ["/v1/responses", { model: "m" }],
        ["/v1/chat/completions", [1, 2]],
      ] as const
    ) {
      const response = await post(fake, path, body);
      strictEqual(response.status, 400, path);
      strictEqual((await response.json()).error.type, "BadRequestError");
    }
  });
});

Deno.test("createFakeUpstreamHandler() routes and records like vLLM", async (t) => {
  const fake = createFakeUpstreamHandler();

  await t.step("GET /health answers 200 with no body", async () => {
    const response = await fake.fetch("http://fake.test/health");
    strictEqual(response.status, 200);
    strictEqual(await response.text(), "");
  });

  await t.step("unknown paths answer 404, wrong methods 405", async () => {
    const missing = await fake.fetch("http://fake.test/v2/nothing");
    strictEqual(missing.status, 404);
    deepStrictEqual(await missing.json(), { detail: "Not Found" });
    const wrong = await fake.fetch("http://fake.test/v1/chat/completions");
    strictEqual(wrong.status, 405);
    await wrong.body?.cancel();
  });

  await t.step("every request is recorded", async () => {
    fake.requests.length = 0;
    const text = JSON.stringify(CHAT);
    const response = await fake.fetch(
      "http://fake.test/v1/chat/completions?tenant=a",
      {
        method: "POST",
        headers: { "Content-Type": "application/json", "X-Trace": "t1" },
        body: text,
      },
    );
    await response.body?.cancel();
    await (await fake.fetch("http://fake.test/v1/models")).body?.cancel();
    const [chat, models] = fake.requests;
    strictEqual(chat?.method, "POST");
    strictEqual(chat?.path, "/v1/chat/completions");
    strictEqual(chat?.search, "?tenant=a");
    strictEqual(chat?.headers["x-trace"], "t1");
    strictEqual(chat?.headers["content-type"], "application/json");
    strictEqual(chat?.text, text);
    deepStrictEqual(chat?.body, CHAT);
    strictEqual(chat?.fault, "none");
    strictEqual(models?.method, "GET");
    strictEqual(models?.body, undefined);
    strictEqual(fake.requests.length, 2);
  });

  await t.step("GET /version answers the release, as vLLM does", async () => {
    const response = await fake.fetch("http://fake.test/version");
    deepStrictEqual(await response.json(), { version: "0.20.0" });
    const older = createFakeUpstreamHandler({ version: "0.12.0" });
    deepStrictEqual(
      await (await older.fetch("http://fake.test/version")).json(),
      { version: "0.12.0" },
    );
    const none = createFakeUpstreamHandler({ version: null });
    const missing = await none.fetch("http://fake.test/version");
    strictEqual(missing.status, 404);
    await missing.body?.cancel();
  });

  await t.step(
    "POST /detokenize answers vLLM's shape, and 400 for what vLLM refuses",
    async () => {
      const response = await post(fake, "/detokenize", {
        model: "m",
        tokens: [1, 7920, 0],
      });
      strictEqual(response.status, 200);
      deepStrictEqual(await response.json(), { prompt: "<1><7920><0>" });
      for (
        const body of [
          {},
          { tokens: "1 2" },
          { tokens: [-1] },
          { tokens: [1.5] },
          { tokens: [2 ** 64] },
          [1, 2],
        ]
      ) {
        const refused = await post(fake, "/detokenize", body);
        strictEqual(refused.status, 400, JSON.stringify(body));
        strictEqual((await refused.json()).error.type, "BadRequestError");
      }
      const wrong = await fake.fetch("http://fake.test/detokenize");
      strictEqual(wrong.status, 405);
      await wrong.body?.cancel();
    },
  );
});

Deno.test("createFakeUpstreamHandler() keeps no request with recordRequests: false", async () => {
  const fake = createFakeUpstreamHandler({ recordRequests: false });
  for (let i = 0; i < 3; i++) {
    const response = await post(fake, "/v1/chat/completions", CHAT);
    strictEqual(response.status, 200);
    await response.body?.cancel();
    await (await post(fake, "/tokenize", CHAT)).body?.cancel();
  }
  strictEqual(fake.requests.length, 0);
  const recording = createFakeUpstreamHandler();
  await (await post(recording, "/tokenize", CHAT)).body?.cancel();
  strictEqual(recording.requests.length, 1);
});

Deno.test("createFakeUpstreamHandler() fails on demand", async (t) => {
  const fake = createFakeUpstreamHandler();
  const client = sdk(fake.fetch);
  const chat = {
    model: "m",
    messages: [{ role: "user" as const, content: "Hi" }],
  };

  for (
    const [fault, status] of [["http-500", 500], ["http-503", 503]] as const
  ) {
    await t.step(`"${fault}" answers an OpenAI-shaped ${status}`, async () => {
      fake.fault = fault;
      const response = await post(fake, "/v1/chat/completions", chat);
      strictEqual(response.status, status);
      const { error } = await response.json();
      strictEqual(error.code, status);
      const thrown = await client.chat.completions.create(chat).catch((
        error: unknown,
      ) => error);
      ok(thrown instanceof OpenAI.APIError);
      strictEqual(thrown.status, status);
    });
  }

  await t.step('"non-json" answers an HTML 200', async () => {
    fake.fault = "non-json";
    const response = await post(fake, "/v1/chat/completions", chat);
    strictEqual(response.status, 200);
    strictEqual(response.headers.get("content-type"), "text/html");
    await rejects(response.json(), SyntaxError);
  });

  await t.step(
    '"cut" fails a stream mid-way: the SDK iteration throws',
    async () => {
      fake.fault = "cut";
      const stream = await client.chat.completions.create({
        ...chat,
        stream: true,
        stream_options: { include_usage: true },
      });
      let text = "";
      await rejects(async () => {
        for await (const chunk of stream) {
          text += chunk.choices[0]?.delta.content ?? "";
        }
      }, TypeError);
      ok(text.length > 0 && text.length < "Noted: 1 messages.".length);
    },
  );

  await t.step('"cut" fails a JSON body mid-way', async () => {
    fake.fault = "cut";
    const response = await post(fake, "/v1/chat/completions", chat);
    strictEqual(response.status, 200);
    ok(await drain(response) instanceof TypeError);
    await rejects(client.chat.completions.create(chat));
  });

  await t.step("faults spare /tokenize, /v1/models and /health", async () => {
    fake.fault = "http-500";
    strictEqual((await post(fake, "/tokenize", chat)).status, 200);
    strictEqual((await fake.fetch("http://fake.test/health")).status, 200);
    const models = await fake.fetch("http://fake.test/v1/models");
    strictEqual(models.status, 200);
    await models.body?.cancel();
    strictEqual(fake.requests.at(-1)?.fault, "none");
  });

  await t.step('"stall" holds until the request aborts', async () => {
    fake.fault = "stall";
    fake.requests.length = 0;
    const controller = new AbortController();
    let settled = false;
    const call = client.chat.completions.create(chat, {
      signal: controller.signal,
    }).finally(() => settled = true);
    await until(() => fake.requests.length === 1);
    strictEqual(settled, false);
    controller.abort();
    await rejects(call, OpenAI.APIUserAbortError);
    strictEqual(fake.requests[0]?.fault, "stall");
  });

  await t.step(
    '"stall" holds a handler request until the signal aborts',
    async () => {
      const closing = new AbortController();
      const held = createFakeUpstreamHandler({
        fault: "stall",
        signal: closing.signal,
      });
      let settled = false;
      const call = held.handler(
        new Request("http://fake.test/v1/completions", {
          method: "POST",
          body: JSON.stringify({ model: "m", prompt: "Hi" }),
        }),
      ).finally(() => settled = true);
      await until(() => held.requests.length === 1);
      strictEqual(settled, false);
      closing.abort();
      strictEqual((await call).status, 503);
      await (await call).body?.cancel();
    },
  );
});

Deno.test("createFakeUpstreamHandler() paces through an injected sleep", async (t) => {
  await t.step('"delay" waits delayMs before answering', async () => {
    const waits: number[] = [];
    const entered = deferred();
    const wake = deferred();
    const fake = createFakeUpstreamHandler({
      fault: "delay",
      delayMs: 250,
      sleep(ms) {
        waits.push(ms);
        entered.resolve();
        return wake.promise;
      },
    });
    let settled = false;
    const call = post(fake, "/v1/chat/completions", CHAT).finally(() =>
      settled = true
    );
    await entered.promise;
    deepStrictEqual(waits, [250]);
    strictEqual(settled, false);
    wake.resolve();
    const response = await call;
    strictEqual(response.status, 200);
    strictEqual((await response.json()).object, "chat.completion");
  });

  await t.step("chunkDelayMs pauses between streamed chunks only", async () => {
    const waits: number[] = [];
    const fake = createFakeUpstreamHandler({
      chunkDelayMs: 5,
      sleep(ms) {
        waits.push(ms);
        return Promise.resolve();
      },
    });
    const response = await post(fake, "/v1/chat/completions", {
      ...CHAT,
      stream: true,
    });
    const text = await response.text();
    const events = text.split("\n\n").filter((event) => event !== "");
    strictEqual(events.at(-1), "data: [DONE]");
    strictEqual(waits.length, events.length - 1);
    ok(waits.every((ms) => ms === 5));
    const plain = await (await post(fake, "/v1/chat/completions", CHAT)).json();
    strictEqual(plain.object, "chat.completion");
    strictEqual(waits.length, events.length - 1);
  });
});

Deno.test("createFakeUpstreamHandler() draws a seeded fault mix", async (t) => {
  const mix = {
    seed: 42,
    errorFraction: 0.2,
    cutFraction: 0.2,
    delayFraction: 0.2,
    delayMs: [10, 20] as const,
  };

  async function run(
    fake: FakeUpstreamHandler,
    waits: number[],
  ): Promise<FakeUpstreamFault[]> {
    const start = fake.requests.length;
    for (let index = 0; index < 60; index++) {
      const response = await post(fake, "/v1/chat/completions", CHAT);
      const body = await drain(response);
      const fault = fake.requests.at(-1)!.fault;
      if (fault === "cut") ok(body instanceof TypeError);
      if (fault === "http-500" || fault === "http-503") {
        strictEqual(String(response.status), fault.slice(5));
      }
    }
    ok(waits.every((ms) => ms >= 10 && ms <= 20 && Number.isInteger(ms)));
    return fake.requests.slice(start).map((request) => request.fault);
  }

  function create(waits: number[]): FakeUpstreamHandler {
    return createFakeUpstreamHandler({
      fault: mix,
      sleep(ms) {
        waits.push(ms);
        return Promise.resolve();
      },
    });
  }

  await t.step("the same seed gives the same faults and delays", async () => {
    const firstWaits: number[] = [];
    const secondWaits: number[] = [];
    const first = await run(create(firstWaits), firstWaits);
    const second = await run(create(secondWaits), secondWaits);
    deepStrictEqual(first, second);
    deepStrictEqual(firstWaits, secondWaits);
    for (const fault of ["none", "http-500", "http-503", "cut", "delay"]) {
      ok(first.includes(fault as FakeUpstreamFault), fault);
    }
    strictEqual(
      firstWaits.length,
      first.filter((fault) => fault === "delay").length,
    );
    const share = first.filter((fault) => fault !== "none").length / 60;
    ok(share > 0.4 && share < 0.8, String(share));
  });

  await t.step(
    "setting the mix again restarts it; another seed differs",
    async () => {
      const waits: number[] = [];
      const fake = create(waits);
      const first = await run(fake, waits);
      fake.fault = mix;
      deepStrictEqual(await run(fake, []), first);
      fake.fault = { ...mix, seed: 43 };
      notStrictEqual(
        JSON.stringify(await run(fake, [])),
        JSON.stringify(first),
      );
    },
  );
});

Deno.test("createFakeUpstreamHandler() rejects bad options", () => {
  throws(() => createFakeUpstreamHandler({ maxModelLen: 0 }), RangeError);
  throws(() => createFakeUpstreamHandler({ chunkDelayMs: -1 }), RangeError);
  throws(() => createFakeUpstreamHandler({ delayMs: NaN }), RangeError);
  throws(() => createFakeUpstreamHandler({ model: "" }), RangeError);
  throws(
    () => createFakeUpstreamHandler({ fault: "boom" as FakeUpstreamFault }),
    RangeError,
  );
  const fake = createFakeUpstreamHandler();
  throws(() => fake.fault = { seed: 1.5 }, RangeError);
  throws(
    () => fake.fault = { seed: 1, errorFraction: 0.6, cutFraction: 0.6 },
    RangeError,
  );
  throws(() => fake.fault = { seed: 1, delayMs: [20, 10] }, RangeError);
  strictEqual(fake.fault, "none");
});

Deno.test("serveFakeUpstream() serves vLLM's protocol on port 0", async (t) => {
  await using upstream = await serveFakeUpstream({ maxModelLen: 4096 });
  const client = sdk(undefined, upstream.baseUrl);

  await t.step("at the root of 127.0.0.1:<port>", () => {
    const url = new URL(upstream.url);
    strictEqual(url.hostname, "127.0.0.1");
    ok(Number(url.port) > 0);
    strictEqual(upstream.baseUrl, `${upstream.url}/v1`);
    strictEqual(upstream.tokenizeUrl, `${upstream.url}/tokenize`);
  });

  await t.step("/tokenize and chat usage agree over the network", async () => {
    const tokenized = await (await fetch(upstream.tokenizeUrl, {
      method: "POST",
      body: JSON.stringify(CHAT),
    })).json();
    strictEqual(tokenized.max_model_len, 4096);
    const chat = await client.chat.completions.create({
      model: "m",
      messages: [
        { role: "system", content: "You are terse." },
        { role: "user", content: "What is the capital of France?" },
      ],
      tools: [{
        type: "function",
        function: { name: "lookup", parameters: { type: "object" } },
      }],
    });
    strictEqual(chat.usage?.prompt_tokens, tokenized.count);
    strictEqual(
      upstream.requests.at(-1)?.headers.authorization,
      "Bearer sk-test",
    );
  });

  await t.step(
    '"cut" breaks the connection: the SDK iteration throws',
    async () => {
      upstream.fault = "cut";
      const stream = await client.chat.completions.create({
        model: "m",
        messages: [{ role: "user", content: "Hi" }],
        stream: true,
      });
      let text = "";
      await rejects(async () => {
        for await (const chunk of stream) {
          text += chunk.choices[0]?.delta.content ?? "";
        }
      });
      ok(text.length < "Noted: 1 messages.".length);
      upstream.fault = "none";
    },
  );

  await t.step("http-503 reaches the SDK as its status", async () => {
    upstream.fault = "http-503";
    // Faults spare /v1/models: a host's probe still sees the server.
    strictEqual((await client.models.list()).data[0]?.id, "fake-model");
    const error = await client.chat.completions.create({
      model: "m",
      messages: [{ role: "user", content: "Hi" }],
    }).catch((error: unknown) => error);
    ok(error instanceof OpenAI.APIError);
    strictEqual(error.status, 503);
    upstream.fault = "none";
  });
});

Deno.test("serveFakeUpstream() releases stalled requests when disposed", async () => {
  const upstream = await serveFakeUpstream({ fault: "stall" });
  let settled = false;
  const call = fetch(`${upstream.baseUrl}/chat/completions`, {
    method: "POST",
    body: JSON.stringify(CHAT),
  }).finally(() => settled = true);
  await until(() => upstream.requests.length === 1);
  strictEqual(settled, false);
  await upstream[Symbol.asyncDispose]();
  const response = await call;
  strictEqual(response.status, 503);
  await response.body?.cancel();
});

Deno.test("serveFakeUpstream() ends paced streams when disposed", async () => {
  const upstream = await serveFakeUpstream({ chunkDelayMs: 60_000 });
  const response = await fetch(`${upstream.baseUrl}/chat/completions`, {
    method: "POST",
    body: JSON.stringify({ ...CHAT, stream: true }),
  });
  const reader = response.body!.getReader();
  ok((await reader.read()).value !== undefined);
  const next = reader.read().then(() => undefined, (error: unknown) => error);
  await upstream[Symbol.asyncDispose]();
  ok(await next instanceof Error);
});
