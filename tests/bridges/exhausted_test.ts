// Covers: src/bridges/exhausted.ts, src/bridges/exhaustion.ts, src/bridges/answers.ts
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import OpenAI from "openai";
import { ChatOpenAI } from "@langchain/openai";
import { ContextOverflowError } from "@langchain/core/errors";
import { APICallError, generateText, RetryError, streamText } from "ai";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import {
  Agent,
  OpenAIChatCompletionsModel,
  run,
  setTracingDisabled,
} from "@openai/agents";
import { budgetedFetch } from "../../src/bridges/fetch.ts";
import {
  ContextWindowExhaustedError,
  isContextWindowExhausted,
} from "../../src/bridges/exhausted.ts";
import { exhaustionMessage } from "../../src/bridges/exhaustion.ts";
import type { ExhaustedPolicy } from "../../src/bridges/options.ts";
import { FakeBackend } from "../../src/testing/mod.ts";
import { hermesReading } from "../_kit/hermes_reading.ts";

const W = 55705;
const C = 65536;
const BASE = "http://vllm.test/v1";

/** A fetch the overflow answer never reaches. */
const unreachable: typeof fetch = () => {
  throw new Error("the upstream was called");
};

/** budgetedFetch whose backend counts `count`: the overflow 400 answers every chat call. */
function overflowing(count: number, onExhausted?: ExhaustedPolicy) {
  return budgetedFetch(unreachable, {
    window: W,
    contextLength: C,
    backend: new FakeBackend({ count }),
    ...(onExhausted === undefined ? {} : { onExhausted }),
  });
}

/** The two ways to the answer: the context is full, or (reject) the window is. */
const CASES = [
  { what: "the context no longer holds R", count: C - 100 },
  { what: "reject, the window is full", count: W - 100, policy: "reject" },
] as const;

const MESSAGES = [{ role: "user" as const, content: "Hi" }];

async function thrown(run: () => Promise<unknown>): Promise<unknown> {
  try {
    await run();
  } catch (error) {
    return error;
  }
  throw new Error("expected the call to fail");
}

// Nothing of the Agents SDK's tracing leaves the process.
setTracingDisabled(true);

Deno.test("the overflow 400 reads as a context overflow to the openai SDK, LangChain.js, the AI SDK and the Agents SDK", async (t) => {
  for (const { what, count, ...rest } of CASES) {
    const fetch = overflowing(
      count,
      "policy" in rest ? rest.policy : undefined,
    );
    await t.step(
      `openai: BadRequestError, code context_length_exceeded (${what})`,
      async () => {
        const client = new OpenAI({
          baseURL: BASE,
          apiKey: "-",
          fetch,
          maxRetries: 0,
        });
        const error = await thrown(() =>
          client.chat.completions.create({ model: "m", messages: MESSAGES })
        );
        ok(error instanceof OpenAI.BadRequestError, String(error));
        strictEqual(error.code, "context_length_exceeded");
        ok(isContextWindowExhausted(error));
      },
    );
    await t.step(
      `OpenAI Agents SDK: run() throws the BadRequestError (${what})`,
      async () => {
        const client = new OpenAI({
          baseURL: BASE,
          apiKey: "-",
          fetch,
          maxRetries: 0,
        });
        const agent = new Agent({
          name: "worker",
          instructions: "Work.",
          model: new OpenAIChatCompletionsModel(client, "m"),
        });
        const error = await thrown(() => run(agent, "Hi"));
        ok(error instanceof OpenAI.BadRequestError, String(error));
        ok(isContextWindowExhausted(error));
      },
    );
    await t.step(`LangChain.js: ContextOverflowError (${what})`, async () => {
      const model = new ChatOpenAI({
        model: "m",
        apiKey: "-",
        maxRetries: 0,
        configuration: { baseURL: BASE, fetch },
      });
      const error = await thrown(() => model.invoke("Hi"));
      ok(ContextOverflowError.isInstance(error), String(error));
      ok(isContextWindowExhausted(error));
    });
    const provider = createOpenAICompatible({
      name: "vllm",
      baseURL: BASE,
      fetch,
    });
    await t.step(`AI SDK generateText: APICallError (${what})`, async () => {
      const error = await thrown(() =>
        generateText({ model: provider("m"), prompt: "Hi", maxRetries: 0 })
      );
      ok(APICallError.isInstance(error), String(error));
      strictEqual(error.statusCode, 400);
      strictEqual(error.isRetryable, false);
      strictEqual(
        (error.data as { error: { code: string } }).error.code,
        "context_length_exceeded",
      );
      ok(isContextWindowExhausted(error));
    });
    await t.step(
      `AI SDK streamText: the error its onError gets (${what})`,
      async () => {
        const errors: unknown[] = [];
        const result = streamText({
          model: provider("m"),
          prompt: "Hi",
          maxRetries: 0,
          onError: ({ error }) => void errors.push(error),
        });
        for await (const _ of result.textStream) { /* nothing arrives */ }
        strictEqual(errors.length, 1);
        ok(isContextWindowExhausted(errors[0]));
      },
    );
  }
});

Deno.test("Hermes reads the overflow 400 as one to compress for, never as a cap to lower", () => {
  for (const { count, ...rest } of CASES) {
    const policy = "policy" in rest ? rest.policy : undefined;
    // Built as the bridges build it.
    const message = exhaustionMessage({
      promptTokens: count,
      contextLength: C,
      window: W,
      requiredTokens: 4096,
      availableTokens: policy === "reject" ? W - count : C - count,
      fitsContext: policy === "reject",
    });
    deepStrictEqual(hermesReading(message), {
      compresses: true,
      lowersCapTo: undefined,
      outputCapError: false,
      // The real context length: Hermes keeps its window.
      contextLimit: C,
    });
  }
  // vLLM's own wording, where the prompt still fits C, is a cap Hermes lowers:
  // what the answer avoids.
  const vllm =
    "This model's maximum context length is 65536 tokens. However, you requested 4096 output tokens and your prompt contains 65000 input tokens, for a total of 69096 tokens. Please reduce the length of the input prompt or the number of requested output tokens.";
  strictEqual(hermesReading(vllm).lowersCapTo, 536);
});

Deno.test("exhaustionMessage() states C, W and P as they are", async (t) => {
  const base = {
    contextLength: C,
    window: W,
    requiredTokens: 4096,
  };
  await t.step("the window is full", () => {
    strictEqual(
      exhaustionMessage({
        ...base,
        promptTokens: 53000,
        availableTokens: 2705,
        fitsContext: true,
      }),
      "This model's maximum context length is 65536 tokens, and its compression window is 55705 tokens. However, your prompt contains 53000 input tokens, which leaves 2705 tokens for the reply below the compression window, fewer than the 4096 it needs. Please reduce the length of the messages.",
    );
  });
  await t.step("past C: no negative room, and an estimate says so", () => {
    strictEqual(
      exhaustionMessage({
        ...base,
        promptTokens: 70000,
        availableTokens: -4464,
        fitsContext: false,
        estimated: true,
      }),
      "This model's maximum context length is 65536 tokens, and its compression window is 55705 tokens. However, your prompt contains about 70000 input tokens, which leaves 0 tokens for the reply within the maximum context length, fewer than the 4096 it needs. Please reduce the length of the messages.",
    );
  });
});

Deno.test("isContextWindowExhausted() recognises the overflow in each SDK's shape and nothing else", async (t) => {
  const exhausted = new ContextWindowExhaustedError({
    promptTokens: 65000,
    contextLength: C,
    window: W,
    requiredTokens: 4096,
    availableTokens: 536,
    fitsContext: false,
  });
  const body = {
    error: {
      message: "too long",
      type: "invalid_request_error",
      param: "messages",
      code: "context_length_exceeded",
    },
  };
  await t.step("ContextWindowExhaustedError, and errors that wrap it", () => {
    strictEqual(exhausted.name, "ContextWindowExhaustedError");
    strictEqual(exhausted.code, "context_length_exceeded");
    strictEqual(exhausted.availableTokens, 536);
    ok(exhausted.message.includes("maximum context length is 65536 tokens"));
    ok(isContextWindowExhausted(exhausted));
    ok(isContextWindowExhausted(new Error("run failed", { cause: exhausted })));
  });
  await t.step("the SDKs' own error classes", () => {
    const headers = new Headers();
    ok(isContextWindowExhausted(
      OpenAI.APIError.generate(400, body, undefined, headers),
    ));
    const call = new APICallError({
      message: "Bad Request",
      url: `${BASE}/chat/completions`,
      requestBodyValues: {},
      statusCode: 400,
      responseBody: JSON.stringify(body),
    });
    // Without `data` (an error schema that did not parse), the body decides.
    ok(isContextWindowExhausted(call));
    ok(isContextWindowExhausted(
      new RetryError({ message: "failed", reason: "abort", errors: [call] }),
    ));
    ok(isContextWindowExhausted(new ContextOverflowError()));
  });
  await t.step("other errors, and values that are not errors", () => {
    const other = { error: { ...body.error, code: "invalid_json" } };
    const hostile = Object.defineProperty({}, "name", {
      get() {
        throw new Error("getter");
      },
    });
    const cyclic: { cause?: unknown } = {};
    cyclic.cause = cyclic;
    for (
      const value of [
        OpenAI.APIError.generate(400, other, undefined, new Headers()),
        OpenAI.APIError.generate(429, undefined, "slow down", new Headers()),
        new APICallError({
          message: "Bad Request",
          url: BASE,
          requestBodyValues: {},
          statusCode: 400,
          responseBody: "context_length_exceeded, but not JSON",
        }),
        new Error("context_length_exceeded"),
        "context_length_exceeded",
        null,
        undefined,
        42,
        hostile,
        cyclic,
      ]
    ) {
      strictEqual(isContextWindowExhausted(value), false, String(value));
    }
  });
});
