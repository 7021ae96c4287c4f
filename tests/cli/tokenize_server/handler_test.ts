// Covers: src/cli/tokenize_server/handler.ts, src/cli/tokenize_server/settings.ts
import {
  deepStrictEqual,
  ok,
  rejects,
  strictEqual,
  throws,
} from "node:assert/strict";
import { dirname } from "node:path";
import type { JsonObject } from "../../../src/core/backend.ts";
import { LocalBackend } from "../../../src/backends/local/mod.ts";
import { CountError } from "../../../src/core/errors.ts";
import { VllmBackend } from "../../../src/backends/vllm/mod.ts";
import { createTokenizeHandler } from "../../../src/cli/tokenize_server/handler.ts";
import { resolveTokenizeServerSettings } from "../../../src/cli/tokenize_server/settings.ts";
import { MODEL_FILES } from "../../_kit/model_files.ts";

const QWEN3 = dirname(
  MODEL_FILES.find((model) => model.family === "qwen3")!.tokenizerPath,
);
const MAX_MODEL_LEN = 32768;
const DEFAULT_LIMITS = {
  maxRequestBytes: 33554432,
  maxHeaderBytes: 65536,
  headersTimeoutSeconds: 30,
  requestTimeoutSeconds: 300,
  keepAliveTimeoutSeconds: 75,
  maxConnections: 512,
};
const RAISING = "{{ raise_exception('Conversation roles must alternate') }}";

const WEATHER_TOOL = {
  type: "function",
  function: {
    name: "get_weather",
    description: "Current weather in a city",
    parameters: {
      type: "object",
      properties: { city: { type: "string" }, days: { type: "integer" } },
      required: ["city"],
    },
  },
};

/** Chat requests the vLLM backend and the local backend must count alike. */
const REQUESTS: JsonObject[] = [
  { messages: [{ role: "user", content: "Hello there" }] },
  {
    messages: [
      { role: "system", content: "You are terse." },
      { role: "user", content: "Weather in Paris and 東京? 🌦" },
      {
        role: "assistant",
        content: "",
        reasoning_content: "Two cities: call the tool twice.",
        tool_calls: [
          {
            id: "c1",
            type: "function",
            function: {
              name: "get_weather",
              arguments: '{"city": "Paris", "days": 1.0}',
            },
          },
          {
            id: "c2",
            type: "function",
            function: {
              name: "get_weather",
              arguments: '{"days": 3, "city": "東京"}',
            },
          },
        ],
      },
      { role: "tool", tool_call_id: "c1", content: '{"temp": 21.5}' },
      { role: "tool", tool_call_id: "c2", content: '{"temp": 18}' },
      {
        role: "user",
        content: "Thanks.\r\n\n    Now in code:\n```py\nx = 1\n```",
      },
    ],
    tools: [WEATHER_TOOL],
  },
  {
    messages: [
      { role: "user", content: "Think, then answer: 2+2?" },
      { role: "assistant", content: "4", reasoning_content: "Easy." },
      { role: "user", content: "And 3+3?" },
    ],
    chat_template_kwargs: { enable_thinking: false },
  },
];

function post(path: string, body: unknown): Request {
  return new Request(`http://tokenize.test${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
}

async function errorOf(response: Response, status: number): Promise<string> {
  strictEqual(response.status, status);
  const body = await response.json();
  strictEqual(body.error.code, status);
  strictEqual(typeof body.error.type, "string");
  return body.error.message;
}

Deno.test("createTokenizeHandler() answers /tokenize and /detokenize as vLLM does", async (t) => {
  await using backend = new LocalBackend({ dir: QWEN3, cache: null });
  const handler = createTokenizeHandler({
    backend,
    maxModelLen: MAX_MODEL_LEN,
  });

  await t.step(
    "the chat form renders the template without special tokens",
    async () => {
      const request = REQUESTS[1]!;
      const response = await handler(post("/tokenize", request));
      strictEqual(response.status, 200);
      const body = await response.json();
      deepStrictEqual(Object.keys(body), [
        "count",
        "max_model_len",
        "tokens",
        "token_strs",
      ]);
      strictEqual(body.max_model_len, MAX_MODEL_LEN);
      strictEqual(body.token_strs, null);
      strictEqual(body.count, body.tokens.length);
      strictEqual(
        body.count,
        await backend.count(request, { contextLength: MAX_MODEL_LEN }),
      );
      const text = await backend.detokenize(body.tokens);
      ok(text.startsWith("<|im_start|>system\nYou are terse."));
      ok(text.endsWith("<|im_start|>assistant\n"));
    },
  );

  await t.step(
    "add_generation_prompt: false drops the assistant header",
    async () => {
      const body = { messages: [{ role: "user", content: "Hi" }] };
      const withPrompt = await (await handler(post("/tokenize", body))).json();
      const without = await (await handler(
        post("/tokenize", { ...body, add_generation_prompt: false }),
      )).json();
      ok(without.count < withPrompt.count);
      deepStrictEqual(
        withPrompt.tokens.slice(0, without.count),
        without.tokens,
      );
    },
  );

  await t.step(
    "the text form tokenizes the prompt; token_strs on request",
    async () => {
      const response = await handler(
        post("/tokenize", { prompt: "Hello world", return_token_strs: true }),
      );
      const body = await response.json();
      deepStrictEqual(body.token_strs, ["Hello", "Ġworld"]);
      strictEqual(body.count, 2);
    },
  );

  await t.step("/detokenize inverts /tokenize", async () => {
    const prompt = "Grüße, 世界! 🌍\n\tcode();  ";
    const tokens = (await (await handler(post("/tokenize", { prompt })))
      .json()).tokens;
    const response = await handler(post("/detokenize", { tokens }));
    strictEqual(response.status, 200);
    deepStrictEqual(await response.json(), { prompt });
  });

  await t.step(
    "bad requests get vLLM's error shape with HTTP 400",
    async () => {
      ok(
        (await errorOf(
          await handler(post("/tokenize", {
            messages: [{ role: "user", content: "x" }],
            chat_template: "{{ 1 }}",
          })),
          400,
        )).includes("--trust-request-chat-template"),
      );
      await errorOf(await handler(post("/tokenize", { prompt: 3 })), 400);
      await errorOf(await handler(post("/tokenize", [])), 400);
      await errorOf(
        await handler(
          new Request("http://t/tokenize", { method: "POST", body: "{" }),
        ),
        400,
      );
      await errorOf(await handler(post("/detokenize", { tokens: [-1] })), 400);
      await errorOf(await handler(post("/detokenize", { tokens: "1" })), 400);
      await errorOf(await handler(new Request("http://t/tokenize")), 405);
      await errorOf(await handler(post("/v1/models", {})), 404);
    },
  );

  await t.step("a request's chat_template is used once trusted", async () => {
    const trusting = createTokenizeHandler({
      backend,
      maxModelLen: MAX_MODEL_LEN,
      trustRequestChatTemplate: true,
    });
    const response = await trusting(post("/tokenize", {
      messages: [{ role: "user", content: "x" }],
      chat_template: "{% for m in messages %}{{ m.content }}{% endfor %}",
      return_token_strs: true,
    }));
    deepStrictEqual((await response.json()).token_strs, ["x"]);
  });
});

Deno.test("createTokenizeHandler() reports a template that raises as HTTP 400", async () => {
  await using backend = new LocalBackend({
    dir: QWEN3,
    cache: null,
    chatTemplate: RAISING,
  });
  const handler = createTokenizeHandler({ backend, maxModelLen: 8 });
  const secret = "my secret prompt";
  const message = await errorOf(
    await handler(
      post("/tokenize", { messages: [{ role: "user", content: secret }] }),
    ),
    400,
  );
  ok(message.includes("template rejected the conversation"));
  ok(!message.includes(secret));
});

Deno.test("VllmBackend.count() against the tokenize server equals LocalBackend.count()", async (t) => {
  await using served = new LocalBackend({ dir: QWEN3, cache: null });
  await using local = new LocalBackend({ dir: QWEN3, cache: null });
  await using server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    createTokenizeHandler({ backend: served, maxModelLen: MAX_MODEL_LEN }),
  );
  const vllm = new VllmBackend({
    url: `http://127.0.0.1:${server.addr.port}/tokenize`,
    cache: null,
  });
  const options = { contextLength: MAX_MODEL_LEN };
  for (const [i, request] of REQUESTS.entries()) {
    await t.step(`request ${i}`, async () => {
      const exact = await local.count(request, options);
      strictEqual(await vllm.count(request, options), exact);
      ok(exact > 0);
    });
  }
  await t.step("the text form", async () => {
    const request = { prompt: "Once upon a time" };
    const completion = { ...options, kind: "completion" as const };
    strictEqual(
      await vllm.count(request, completion),
      await local.count(request, completion),
    );
  });
});

Deno.test("VllmBackend.count() throws CountError when the server's template raises", async () => {
  await using served = new LocalBackend({
    dir: QWEN3,
    cache: null,
    chatTemplate: RAISING,
  });
  await using server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    createTokenizeHandler({ backend: served, maxModelLen: MAX_MODEL_LEN }),
  );
  const vllm = new VllmBackend({
    url: `http://127.0.0.1:${server.addr.port}/tokenize`,
    cache: null,
  });
  await rejects(
    vllm.count(REQUESTS[0]!, { contextLength: MAX_MODEL_LEN }),
    CountError,
  );
});

Deno.test("resolveTokenizeServerSettings() reads flags and the environment", async (t) => {
  await t.step("defaults and the environment's model folder", () => {
    deepStrictEqual(
      resolveTokenizeServerSettings(["--max-model-len", "4096"], {
        INCONTEXT_TOKENIZER_DIR: "/models/q",
      }),
      {
        modelDir: "/models/q",
        maxModelLen: 4096,
        hostname: "127.0.0.1",
        port: 8001,
        tokenizerMode: "auto",
        trustRequestChatTemplate: false,
        limits: DEFAULT_LIMITS,
      },
    );
  });
  await t.step("the server's bounds, from the variables serve reads", () => {
    const settings = resolveTokenizeServerSettings(
      ["--model-dir=/m", "--max-model-len=8"],
      {
        INCONTEXT_MAX_REQUEST_BYTES: "1024",
        INCONTEXT_MAX_HEADER_BYTES: "4096",
        INCONTEXT_HEADERS_TIMEOUT_SECONDS: "5",
        INCONTEXT_REQUEST_TIMEOUT_SECONDS: "20",
        INCONTEXT_KEEPALIVE_TIMEOUT_SECONDS: "2.5",
        INCONTEXT_MAX_CONNECTIONS: "16",
        // Read by serve only: not the tokenize server's to check.
        INCONTEXT_BACKEND: "nonsense",
      },
    );
    deepStrictEqual(settings !== "help" && settings.limits, {
      maxRequestBytes: 1024,
      maxHeaderBytes: 4096,
      headersTimeoutSeconds: 5,
      requestTimeoutSeconds: 20,
      keepAliveTimeoutSeconds: 2.5,
      maxConnections: 16,
    });
  });
  await t.step("the tokenizer mode: the flag, else the environment", () => {
    const env = {
      INCONTEXT_TOKENIZER_DIR: "/m",
      INCONTEXT_VLLM_TOKENIZER_MODE: "deepseek_v4",
    };
    const read = (args: string[]) => {
      const settings = resolveTokenizeServerSettings(
        ["--max-model-len=8", ...args],
        env,
      );
      return settings === "help" ? settings : settings.tokenizerMode;
    };
    strictEqual(read([]), "deepseek_v4");
    strictEqual(read(["--tokenizer-mode=DeepSeek_V32"]), "deepseek_v32");
    throws(
      () => read(["--tokenizer-mode=deepseek"]),
      (error: unknown) =>
        (error as { issues: { variable: string }[] }).issues[0]!.variable ===
          "--tokenizer-mode (INCONTEXT_VLLM_TOKENIZER_MODE)",
    );
  });
  await t.step("flags", () => {
    const settings = resolveTokenizeServerSettings([
      "--model-dir=/m",
      "--max-model-len=8",
      "--listen=[::1]:9000",
      "--chat-template=/t.jinja",
      "--trust-request-chat-template",
    ], {});
    deepStrictEqual(settings, {
      modelDir: "/m",
      maxModelLen: 8,
      hostname: "::1",
      port: 9000,
      chatTemplate: "/t.jinja",
      tokenizerMode: "auto",
      trustRequestChatTemplate: true,
      limits: DEFAULT_LIMITS,
    });
  });
  await t.step("--help", () => {
    strictEqual(resolveTokenizeServerSettings(["--help"], {}), "help");
  });
  await t.step("missing and bad settings are all reported", () => {
    let issues: unknown[] = [];
    try {
      resolveTokenizeServerSettings(["--listen", "nope"], {
        INCONTEXT_MAX_REQUEST_BYTES: "0",
        INCONTEXT_MAX_HEADER_BYTES: "100",
      });
    } catch (error) {
      issues = (error as { issues: unknown[] }).issues;
    }
    deepStrictEqual(
      issues.map((issue) => (issue as { variable: string }).variable),
      [
        "--model-dir (INCONTEXT_TOKENIZER_DIR)",
        "--max-model-len",
        "--listen",
        "INCONTEXT_MAX_REQUEST_BYTES",
        "INCONTEXT_MAX_HEADER_BYTES",
      ],
    );
  });
});
