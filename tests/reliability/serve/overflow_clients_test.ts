/**
 * A conversation that grows past the context length through `incontext
 * serve`: the proxy sends W - P, then min(caller's cap, R) once less than R
 * is left below W, and never a smaller cap; once the context no longer holds
 * that, it answers the overflow 400 itself, which the real openai SDK,
 * LangChain.js and the AI SDK each read as a context overflow.
 */
import { ok, strictEqual } from "node:assert/strict";
import OpenAI from "openai";
import { ChatOpenAI } from "@langchain/openai";
import { ContextOverflowError } from "@langchain/core/errors";
import { APICallError, generateText, streamText } from "ai";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { isContextWindowExhausted } from "../../../src/bridges/exhausted.ts";
import { CHAT, startServe, stillServes } from "./_process.ts";

// The settings startServe gives the proxy, and the default R.
const W = 55705;
const C = 65536;
const R = 4096;

/** About 2,000 tokens to the fake's count (a token per 4 characters of JSON). */
const TURN = "x".repeat(8000);

/** Messages that count past C - R, as the conversation above ends. */
const OVERFULL = Array.from({ length: 32 }, () => TURN).join(" ");

async function thrown(run: () => Promise<unknown>): Promise<unknown> {
  try {
    await run();
  } catch (error) {
    return error;
  }
  throw new Error("expected the call to fail");
}

Deno.test("incontext serve never sends a cap below min(caller's cap, R), and every client reads its overflow 400 as one", async (t) => {
  await using served = await startServe();
  const { proxy, upstream } = served;
  const chatCalls = () => upstream.requests.filter((r) => r.path === CHAT);

  await t.step("the openai SDK: a conversation growing past C", async () => {
    const client = new OpenAI({
      baseURL: `${proxy.url}/v1`,
      apiKey: "sk-none",
      maxRetries: 0,
    });
    const messages: OpenAI.ChatCompletionMessageParam[] = [];
    const actions: string[] = [];
    for (let turn = 0; turn < 40; turn++) {
      messages.push({ role: "user", content: TURN });
      const calls = chatCalls().length;
      try {
        const { data, response } = await client.chat.completions.create({
          model: "m",
          max_tokens: 65536,
          messages,
        }).withResponse();
        const action = response.headers.get("x-incontext-action")!;
        const prompt = Number(
          response.headers.get("x-incontext-prompt-tokens"),
        );
        const sent = (chatCalls().at(-1)!.body as { max_tokens: number })
          .max_tokens;
        strictEqual(
          sent,
          Number(response.headers.get("x-incontext-max-tokens")),
        );
        // W - P while R or more is left, else R: never less.
        strictEqual(sent, action === "set" ? W - prompt : R, `turn ${turn}`);
        ok(
          sent >= R && prompt + sent <= C,
          `turn ${turn}: ${prompt} + ${sent}`,
        );
        actions.push(action);
        messages.push({
          role: "assistant",
          content: data.choices[0]!.message.content,
        });
      } catch (error) {
        ok(error instanceof OpenAI.BadRequestError, String(error));
        strictEqual(error.code, "context_length_exceeded");
        ok(isContextWindowExhausted(error));
        strictEqual(chatCalls().length, calls, "the upstream was not called");
        actions.push("overflow");
        break;
      }
    }
    ok(
      actions.includes("set") && actions.includes("compress"),
      String(actions),
    );
    strictEqual(actions.at(-1), "overflow");
    await stillServes(proxy);
  });

  await t.step("LangChain.js: ContextOverflowError", async () => {
    const calls = chatCalls().length;
    const model = new ChatOpenAI({
      model: "m",
      apiKey: "sk-none",
      maxRetries: 0,
      configuration: { baseURL: `${proxy.url}/v1` },
    });
    const error = await thrown(() => model.invoke(OVERFULL));
    ok(ContextOverflowError.isInstance(error), String(error));
    ok(isContextWindowExhausted(error));
    strictEqual(chatCalls().length, calls);
    await stillServes(proxy);
  });

  await t.step(
    "the AI SDK: APICallError, and the error streamText reports",
    async () => {
      const calls = chatCalls().length;
      const provider = createOpenAICompatible({
        name: "vllm",
        baseURL: `${proxy.url}/v1`,
      });
      const error = await thrown(() =>
        generateText({ model: provider("m"), prompt: OVERFULL, maxRetries: 0 })
      );
      ok(APICallError.isInstance(error), String(error));
      strictEqual(error.statusCode, 400);
      ok(isContextWindowExhausted(error));
      const errors: unknown[] = [];
      const streamed = streamText({
        model: provider("m"),
        prompt: OVERFULL,
        maxRetries: 0,
        onError: ({ error }) => void errors.push(error),
      });
      for await (const _ of streamed.textStream) { /* nothing arrives */ }
      strictEqual(errors.length, 1);
      ok(isContextWindowExhausted(errors[0]));
      strictEqual(chatCalls().length, calls);
      await stillServes(proxy);
    },
  );
});
