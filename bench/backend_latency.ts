/**
 * Extra latency per count of every bundled backend, in one run: each HTTP
 * backend counts a ~2 KB, six-message agent chat against its protocol server
 * (the fakes in ./testing, real HTTP on 127.0.0.1, port 0), with no count
 * cache so every count reaches the server; the in-process backends count the
 * same chat on this thread. The baseline is a bare POST of the same body to
 * a server that answers `{}` at once, in the same run: "over a bare POST" is
 * what the backend's own work and protocol add to the round trip any count
 * over HTTP pays.
 *
 *     npx --yes deno@2.9.6 run --allow-net=127.0.0.1 --allow-read --allow-env --allow-write=/tmp bench/backend_latency.ts
 */
import { dirname } from "node:path";
import type { Backend, JsonObject } from "../mod.ts";
import { VllmBackend } from "../src/backends/vllm/mod.ts";
import { LocalBackend } from "../src/backends/local/mod.ts";
import { SglangBackend } from "../src/backends/sglang/mod.ts";
import { LlamaCppBackend } from "../src/backends/llamacpp/mod.ts";
import { TgiBackend } from "../src/backends/tgi/mod.ts";
import { AnthropicBackend } from "../src/backends/anthropic/mod.ts";
import { GeminiBackend } from "../src/backends/gemini/mod.ts";
import { OpenAIBackend } from "../src/backends/openai/mod.ts";
import {
  AnchoredBackend,
  AnchorStore,
  recordResponseUsage,
} from "../src/backends/anchored/mod.ts";
import {
  serveFakeAnthropic,
  serveFakeGemini,
  serveFakeOpenAI,
  serveFakeSglang,
  serveFakeVllmTokenizer,
} from "../src/testing/mod.ts";
import { serveFakeLlamaCpp } from "../src/testing/fake_llamacpp_server.ts";
import { serveFakeTgi } from "../src/testing/fake_tgi_server.ts";
import { MODEL_FILES } from "../tests/_kit/model_files.ts";

const CONTEXT = 32768;
const WARMUP = 50;
const SAMPLES = 400;
const KEY = "bench-key";

/** A ~2 KB agent turn: system prompt, a tool round and a question. */
function chat(model: string): JsonObject {
  const prose =
    "The build failed on the linker step because the cache held a stale object file. ";
  return {
    model,
    messages: [
      { role: "system", content: `You are a coding agent. ${prose.repeat(4)}` },
      { role: "user", content: `Why does the build fail? ${prose.repeat(3)}` },
      {
        role: "assistant",
        content: "Let me look at the log.",
        tool_calls: [{
          id: "call_1",
          type: "function",
          function: { name: "read_file", arguments: '{"path":"build.log"}' },
        }],
      },
      { role: "tool", tool_call_id: "call_1", content: prose.repeat(6) },
      { role: "assistant", content: `The log says: ${prose.repeat(2)}` },
      { role: "user", content: "Fix it, then run the tests again." },
    ],
    tools: [{
      type: "function",
      function: {
        name: "read_file",
        description: "Reads a file of the workspace.",
        parameters: {
          type: "object",
          properties: { path: { type: "string" } },
          required: ["path"],
        },
      },
    }],
  };
}

interface Case {
  readonly name: string;
  readonly endpoint: string;
  readonly exactness: string;
  readonly backend: Backend;
  readonly request: JsonObject;
  readonly kind?: "chat" | "responses";
}

function percentile(samples: readonly number[], p: number): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;
}

async function time(run: () => Promise<unknown>): Promise<number[]> {
  for (let i = 0; i < WARMUP; i++) await run();
  const samples: number[] = [];
  for (let i = 0; i < SAMPLES; i++) {
    const start = performance.now();
    await run();
    samples.push(performance.now() - start);
  }
  return samples;
}

const qwen3 = dirname(
  MODEL_FILES.find((files) => files.family === "qwen3")!.tokenizerPath,
);
const request = chat("bench-model");
const body = JSON.stringify(request);

// The baseline: a bare POST of the same body, answered `{}` at once.
const bare = Deno.serve(
  { port: 0, hostname: "127.0.0.1", onListen() {} },
  async (incoming) => {
    await incoming.arrayBuffer();
    return Response.json({});
  },
);
const bareUrl = `http://127.0.0.1:${bare.addr.port}/`;

await using vllm = await serveFakeVllmTokenizer({ maxModelLen: CONTEXT });
await using sglang = await serveFakeSglang();
await using llamacpp = await serveFakeLlamaCpp({ nCtx: CONTEXT });
await using tgi = await serveFakeTgi({ maxTotalTokens: CONTEXT });
await using anthropic = await serveFakeAnthropic({ apiKey: KEY });
await using gemini = await serveFakeGemini({ apiKey: KEY });
await using openai = await serveFakeOpenAI({ apiKey: KEY });

const anchors = new AnchorStore();
const previous = {
  ...request,
  messages: (request.messages as unknown[]).slice(0, 4),
};
recordResponseUsage(anchors, previous, {
  usage: { prompt_tokens: 380, completion_tokens: 40, total_tokens: 420 },
});
const local = new LocalBackend({ dir: qwen3, cache: null });

const cases: Case[] = [
  {
    name: "vllm",
    endpoint: "POST /tokenize (chat form)",
    exactness: "exact",
    backend: new VllmBackend({ url: `${vllm.url}`, cache: null }),
    request,
  },
  {
    name: "llamacpp",
    endpoint: "POST /apply-template + POST /tokenize (+ GET /props once)",
    exactness: "exact",
    backend: new LlamaCppBackend({ url: llamacpp.url, cache: null }),
    request,
  },
  {
    name: "tgi",
    endpoint: "POST /chat_tokenize (+ GET /info once)",
    exactness: "exact",
    backend: new TgiBackend({ url: tgi.url, cache: null }),
    request,
  },
  {
    name: "sglang",
    endpoint: "local template render + POST /tokenize {prompt}",
    exactness: "exact",
    backend: new SglangBackend({ url: sglang.url, dir: qwen3, cache: null }),
    request,
  },
  {
    name: "anthropic",
    endpoint: "POST /v1/messages/count_tokens",
    exactness: "provider estimate",
    backend: new AnthropicBackend({
      url: anthropic.url,
      apiKey: KEY,
      cache: null,
    }),
    request: chat("claude-sonnet-4-5"),
  },
  {
    name: "gemini",
    endpoint: "POST /v1beta/models/{model}:countTokens",
    exactness: "exact",
    backend: new GeminiBackend({ url: gemini.url, apiKey: KEY, cache: null }),
    request: chat("gemini-2.5-flash"),
  },
  {
    name: "openai (Responses)",
    endpoint: "POST /v1/responses/input_tokens",
    exactness: "exact",
    backend: new OpenAIBackend({ url: openai.url, apiKey: KEY, cache: null }),
    request: {
      model: "gpt-4.1",
      instructions: "You are a coding agent.",
      input: (request.messages as { content: string }[])
        .map((m) => m.content).join("\n"),
    },
    kind: "responses",
  },
  {
    name: "openai (Chat)",
    endpoint: "none: local o200k count + per-message overhead",
    exactness: "estimate",
    backend: new OpenAIBackend({ url: openai.url, apiKey: KEY, cache: null }),
    request: chat("gpt-4o"),
  },
  {
    name: "local",
    endpoint:
      "none: template + tokenizer on the calling thread (Qwen3, cache: null)",
    exactness: "exact",
    backend: local,
    request,
  },
  {
    name: "anchored",
    endpoint: "none: last usage + estimate of the appended messages",
    exactness: "anchored",
    backend: new AnchoredBackend({ anchors }),
    request,
  },
];

console.log(
  `Backend count latency, ${SAMPLES} counts each after ${WARMUP} warm-up, no count cache, ${Deno.build.os} ${navigator.hardwareConcurrency} cores, Deno ${Deno.version.deno}`,
);
const baseline = await time(() =>
  fetch(bareUrl, { method: "POST", body }).then((r) => r.arrayBuffer())
);
const base = percentile(baseline, 0.5);
console.log(
  `bare POST of the same ${body.length}-byte body: p50 ${
    base.toFixed(3)
  } ms, p95 ${percentile(baseline, 0.95).toFixed(3)} ms\n`,
);
console.log(
  "| backend | endpoint | exactness | count p50 | count p95 | p50 over a bare POST |",
);
console.log("|---|---|---|---|---|---|");
for (const c of cases) {
  const options = { contextLength: CONTEXT, kind: c.kind ?? "chat" } as const;
  await c.backend.count(c.request, options);
  const samples = await time(() => c.backend.count(c.request, options));
  const p50 = percentile(samples, 0.5);
  const over = c.endpoint.startsWith("none")
    ? "in-process"
    : `${(p50 - base).toFixed(3)} ms`;
  console.log(
    `| ${c.name} | ${c.endpoint} | ${c.exactness} | ${p50.toFixed(3)} ms | ${
      percentile(samples, 0.95).toFixed(3)
    } ms | ${over} |`,
  );
}
await local[Symbol.asyncDispose]();
await bare.shutdown();
