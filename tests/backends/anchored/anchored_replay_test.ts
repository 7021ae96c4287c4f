// Covers: src/backends/anchored/anchored_backend.ts, src/proxy/handler.ts
/**
 * A replayed multi-turn session without reasoning
 * content, through the proxy with the anchored backend, against an upstream
 * whose `usage` figures come from the project's own tokenize server over the
 * real Qwen3 tokenizer files. Each turn's anchored count is compared with
 * that turn's true prompt tokens, beside the rough estimator's error.
 */
import { ok, strictEqual } from "node:assert/strict";
import { dirname } from "node:path";
import {
  AnchoredBackend,
  AnchorStore,
} from "../../../src/backends/anchored/mod.ts";
import { createProxyHandler } from "../../../src/proxy/mod.ts";
import { roughEstimate } from "../../../src/core/estimate.ts";
import { LocalBackend } from "../../../src/backends/local/mod.ts";
import type { JsonObject } from "../../../src/core/backend.ts";
import { createTokenizeHandler } from "../../../src/cli/tokenize_server/handler.ts";
import { MODEL_FILES } from "../../_kit/model_files.ts";
import { SYSTEM_PROMPT, TOOLS, TURNS } from "../../_kit/replay_session.ts";

const QWEN3 = dirname(
  MODEL_FILES.find((model) => model.family === "qwen3")!.tokenizerPath,
);
const CONTEXT_LENGTH = 131072;
const WINDOW = 98304;
const MODEL = "Qwen/Qwen3-8B";
/** Qwen3 without thinking: the replies carry no reasoning content. */
const KWARGS = { enable_thinking: false };

/**
 * An OpenAI-compatible upstream that replies with the session's scripted
 * turn (by how many user messages the request holds) and reports usage as
 * vLLM would: `prompt_tokens` from `/tokenize`'s chat form over the request,
 * `completion_tokens` the reply's tokens plus the `<|im_end|>` the model
 * generates to stop. Streams when asked, with the usage in a final chunk
 * when `stream_options.include_usage` is set.
 */
function replayUpstream(
  tokenize: (request: Request) => Promise<Response>,
): (request: Request) => Promise<Response> {
  async function count(body: JsonObject): Promise<number> {
    const response = await tokenize(
      new Request("http://tokenize.test/tokenize", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
      }),
    );
    strictEqual(response.status, 200);
    return (await response.json()).count;
  }
  return async function upstream(request) {
    strictEqual(new URL(request.url).pathname, "/v1/chat/completions");
    const body = await request.json();
    const { model, messages, tools, chat_template_kwargs } = body;
    const prompt = await count({
      model,
      messages,
      tools,
      chat_template_kwargs,
    });
    const turn = messages.filter((m: JsonObject) => m.role === "user").length;
    const reply = TURNS[turn - 1]!.reply;
    const completion =
      await count({ prompt: reply, add_special_tokens: false }) + 1;
    const usage = {
      prompt_tokens: prompt,
      completion_tokens: completion,
      total_tokens: prompt + completion,
    };
    const message = { role: "assistant", content: reply };
    if (body.stream !== true) {
      return Response.json({
        id: `chatcmpl-${turn}`,
        object: "chat.completion",
        model,
        choices: [{ index: 0, message, finish_reason: "stop" }],
        usage,
      });
    }
    const chunk = (fields: JsonObject) =>
      `data: ${
        JSON.stringify({
          id: `chatcmpl-${turn}`,
          object: "chat.completion.chunk",
          model,
          ...fields,
        })
      }\n\n`;
    const events = [
      chunk({ choices: [{ index: 0, delta: { role: "assistant" } }] }),
      ...reply.match(/[\s\S]{1,200}/g)!.map((piece) =>
        chunk({ choices: [{ index: 0, delta: { content: piece } }] })
      ),
      chunk({ choices: [{ index: 0, delta: {}, finish_reason: "stop" }] }),
      ...(body.stream_options?.include_usage
        ? [chunk({ choices: [], usage })]
        : []),
      "data: [DONE]\n\n",
    ];
    return new Response(events.join(""), {
      headers: { "content-type": "text/event-stream" },
    });
  };
}

/** The reply and usage of a JSON or streamed chat completion. */
async function readAnswer(
  response: Response,
): Promise<{ reply: string; promptTokens: number }> {
  if (response.headers.get("content-type") !== "text/event-stream") {
    const body = await response.json();
    return {
      reply: body.choices[0].message.content,
      promptTokens: body.usage.prompt_tokens,
    };
  }
  let reply = "";
  let promptTokens = -1;
  for (const event of (await response.text()).split("\n\n")) {
    const data = event.replace(/^data: /, "");
    if (data === "" || data === "[DONE]") continue;
    const chunk = JSON.parse(data);
    reply += chunk.choices[0]?.delta?.content ?? "";
    promptTokens = chunk.usage?.prompt_tokens ?? promptTokens;
  }
  return { reply, promptTokens };
}

function percent(value: number, truth: number): string {
  const error = (value - truth) / truth * 100;
  return `${error >= 0 ? "+" : ""}${error.toFixed(2)}%`;
}

Deno.test("AnchoredBackend through the proxy stays within 1% of the real prompt tokens over a replayed session", async () => {
  await using tokenizer = new LocalBackend({ dir: QWEN3, cache: null });
  const tokenize = createTokenizeHandler({
    backend: tokenizer,
    maxModelLen: CONTEXT_LENGTH,
  });
  await using server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    replayUpstream(tokenize),
  );
  const anchors = new AnchorStore();
  const proxy = createProxyHandler({
    upstream: `http://127.0.0.1:${server.addr.port}`,
    window: WINDOW,
    contextLength: CONTEXT_LENGTH,
    backend: new AnchoredBackend({ anchors }),
    anchors,
  });
  // The same store, with the appended messages counted by the real tokenizer.
  const exactTail = new AnchoredBackend({ anchors, count: tokenizer });

  const messages: JsonObject[] = [{ role: "system", content: SYSTEM_PROMPT }];
  const rows: string[][] = [];
  let worstAnchored = 0;
  let worstTail = 0;
  let anchoredTotal = 0;
  let roughTotal = 0;
  for (const [index, turn] of TURNS.entries()) {
    messages.push({ role: "user", content: turn.user });
    const stream = index % 2 === 1;
    const request: JsonObject = {
      model: MODEL,
      messages: [...messages],
      tools: TOOLS,
      chat_template_kwargs: KWARGS,
      max_tokens: 32768,
      ...(stream
        ? { stream: true, stream_options: { include_usage: true } }
        : {}),
    };
    const tail = await exactTail.count(request, {
      contextLength: CONTEXT_LENGTH,
    });
    const response = await proxy(
      new Request("http://proxy.test/v1/chat/completions", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(request),
      }),
    );
    strictEqual(response.status, 200);
    strictEqual(response.headers.get("x-incontext-source"), "usage-anchor");
    const anchored = Number(response.headers.get("x-incontext-prompt-tokens"));
    const { reply, promptTokens: truth } = await readAnswer(response);
    strictEqual(reply, turn.reply);
    ok(truth > 0);
    const rough = roughEstimate(request);
    const anchoredError = Math.abs(anchored - truth) / truth;
    const roughError = Math.abs(rough - truth) / truth;
    if (index > 0) {
      worstAnchored = Math.max(worstAnchored, anchoredError);
      worstTail = Math.max(worstTail, Math.abs(tail.tokens - truth) / truth);
      anchoredTotal += anchoredError;
      roughTotal += roughError;
    }
    rows.push([
      String(index + 1),
      stream ? "sse" : "json",
      String(truth),
      String(anchored),
      index === 0
        ? `${percent(anchored, truth)} (no anchor)`
        : percent(anchored, truth),
      String(tail.tokens),
      percent(tail.tokens, truth),
      String(rough),
      percent(rough, truth),
    ]);
    messages.push({ role: "assistant", content: reply });
  }
  printTable(
    [
      "turn",
      "body",
      "true prompt",
      "anchored",
      "error",
      "exact tail",
      "error",
      "rough",
      "error",
    ],
    rows,
  );
  const turns = TURNS.length - 1;
  console.log(
    `turns 2-${TURNS.length}: anchored mean |error| ${
      (anchoredTotal / turns * 100).toFixed(2)
    }% (worst ${(worstAnchored * 100).toFixed(2)}%), rough mean |error| ${
      (roughTotal / turns * 100).toFixed(2)
    }%`,
  );
  ok(worstAnchored <= 0.01, "an anchored count is more than 1% off");
  ok(
    worstTail <= 0.01,
    "an anchored count with an exact tail is more than 1% off",
  );
  ok(anchoredTotal < roughTotal);
  strictEqual(anchors.size, TURNS.length);
});

function printTable(header: string[], rows: string[][]): void {
  const widths = header.map((title, i) =>
    Math.max(title.length, ...rows.map((row) => row[i]!.length))
  );
  const line = (cells: string[]) =>
    `| ${cells.map((cell, i) => cell.padStart(widths[i]!)).join(" | ")} |`;
  console.log(
    [
      line(header),
      `|${widths.map((w) => "-".repeat(w + 2)).join("|")}|`,
      ...rows.map(line),
    ].join("\n"),
  );
}
