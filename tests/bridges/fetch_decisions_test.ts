// Covers: src/bridges/fetch.ts, src/bridges/decision.ts
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import OpenAI from "openai";
import { generateText } from "ai";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { budgetedFetch } from "../../src/bridges/fetch.ts";
import type { DecisionRequest } from "../../src/bridges/options.ts";
import { isContextWindowExhausted } from "../../src/bridges/exhausted.ts";
import { VllmBackend } from "../../src/backends/vllm/mod.ts";
import type { BudgetResult } from "../../src/core/budget.ts";
import { serveFakeUpstream } from "../../src/testing/mod.ts";

const W = 55705;
const C = 65536;
const R = 4096;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** About 2,000 tokens to the fake's count (a token per 4 characters of JSON). */
const TURN = "x".repeat(8000);

Deno.test("budgetedFetch() never sends a cap below min(caller's cap, R) as a conversation grows past C", async () => {
  await using vllm = await serveFakeUpstream({ maxModelLen: C });
  const backend = new VllmBackend({ url: vllm.tokenizeUrl, cache: null });
  const client = new OpenAI({
    baseURL: vllm.baseUrl,
    apiKey: "sk-none",
    maxRetries: 0,
    fetch: budgetedFetch(fetch, {
      window: W,
      contextLength: C,
      backend,
      decisionHeaders: true,
    }),
  });
  const chatCalls = () =>
    vllm.requests.filter((r) => r.path === "/v1/chat/completions");
  const messages: OpenAI.ChatCompletionMessageParam[] = [];
  const actions: string[] = [];
  for (let turn = 0; turn < 40 && actions.at(-1) !== "overflow"; turn++) {
    messages.push({ role: "user", content: TURN });
    const calls = chatCalls().length;
    try {
      const { data, response } = await client.chat.completions.create({
        model: "m",
        max_tokens: 65536,
        messages,
      }).withResponse();
      const action = response.headers.get("x-incontext-action")!;
      const prompt = Number(response.headers.get("x-incontext-prompt-tokens"));
      const sent = (chatCalls().at(-1)!.body as { max_tokens: number })
        .max_tokens;
      strictEqual(sent, action === "set" ? W - prompt : R, `turn ${turn}`);
      ok(sent >= R && prompt + sent <= C);
      // The fake vLLM's own usage agrees with the count the cap came from.
      strictEqual(data.usage?.prompt_tokens, prompt);
      actions.push(action);
      messages.push({
        role: "assistant",
        content: data.choices[0]!.message.content,
      });
    } catch (error) {
      ok(isContextWindowExhausted(error), String(error));
      strictEqual(chatCalls().length, calls, "the upstream was not called");
      actions.push("overflow");
    }
  }
  ok(actions.includes("set") && actions.includes("compress"), String(actions));
  strictEqual(actions.at(-1), "overflow");
});

Deno.test("budgetedFetch() puts the decision on the response with decisionHeaders, and only then", async (t) => {
  await using vllm = await serveFakeUpstream({ maxModelLen: C });
  const backend = new VllmBackend({ url: vllm.tokenizeUrl, cache: null });
  const seen: DecisionRequest[] = [];
  const options = {
    window: W,
    contextLength: C,
    backend,
    onDecision: (_: BudgetResult, __: string, request: DecisionRequest) =>
      void seen.push(request),
  };
  await t.step(
    "the AI SDK hands them to the host as response.headers",
    async () => {
      const provider = createOpenAICompatible({
        name: "vllm",
        baseURL: vllm.baseUrl,
        fetch: budgetedFetch(fetch, { ...options, decisionHeaders: true }),
      });
      const { response } = await generateText({
        model: provider("m"),
        prompt: "Hi",
        maxRetries: 0,
      });
      const headers = response.headers!;
      strictEqual(headers["x-incontext-action"], "set");
      strictEqual(headers["x-incontext-source"], "vllm-tokenize");
      const prompt = Number(headers["x-incontext-prompt-tokens"]);
      strictEqual(Number(headers["x-incontext-max-tokens"]), W - prompt);
      // The id onDecision was given.
      strictEqual(headers["x-incontext-request-id"], seen.at(-1)!.id);
      ok(UUID.test(seen.at(-1)!.id));
      // The server's own headers are kept.
      ok(headers["content-type"]?.startsWith("application/json"));
    },
  );
  await t.step(
    "without the option, the server's response as it came",
    async () => {
      const client = new OpenAI({
        baseURL: vllm.baseUrl,
        apiKey: "-",
        maxRetries: 0,
        fetch: budgetedFetch(fetch, options),
      });
      const { response } = await client.chat.completions.create({
        model: "m",
        messages: [{ role: "user", content: "Hi" }],
      }).withResponse();
      deepStrictEqual(
        [...response.headers.keys()].filter((name) =>
          name.startsWith("x-incontext-")
        ),
        [],
      );
    },
  );
});

Deno.test("onDecision gets the request's id, URL and headers, so a host tells its own calls apart", async () => {
  await using vllm = await serveFakeUpstream({ maxModelLen: C });
  const backend = new VllmBackend({ url: vllm.tokenizeUrl, cache: null });
  const decisions: [string, DecisionRequest][] = [];
  const provider = createOpenAICompatible({
    name: "vllm",
    baseURL: vllm.baseUrl,
    fetch: budgetedFetch(fetch, {
      window: W,
      contextLength: C,
      backend,
      decisionHeaders: true,
      onDecision: (result, _kind, request) =>
        void decisions.push([result.action, request]),
    }),
  });
  const main = await generateText({
    model: provider("m"),
    prompt: "Work on it",
    maxRetries: 0,
  });
  // A summary call, marked by the host with a header of its own and an id.
  await generateText({
    model: provider("m"),
    prompt: "Summarise",
    maxRetries: 0,
    headers: { "x-agent-call": "summary", "x-request-id": "summary-7" },
  });
  strictEqual(decisions.length, 2);
  const [first, second] = decisions.map(([, request]) => request);
  strictEqual(first!.url, `${vllm.baseUrl}/chat/completions`);
  strictEqual(first!.headers.get("x-agent-call"), null);
  strictEqual(main.response.headers!["x-incontext-request-id"], first!.id);
  strictEqual(second!.headers.get("x-agent-call"), "summary");
  strictEqual(second!.id, "summary-7");
});
