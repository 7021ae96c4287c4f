/**
 * The main job with no configuration: starts a local vLLM-protocol upstream
 * (tokenize + chat completions with real usage) and the incontext proxy in
 * front of it, sends a growing agent conversation through the proxy, and
 * prints the budget each turn gets.
 *
 *     npx --yes deno@2.9.6 task start
 */
import { createCountCache } from "../src/cache/mod.ts";
import { VllmBackend } from "../src/backends/vllm/mod.ts";
import { createProxyHandler } from "../src/proxy/mod.ts";
import { serveFakeUpstream } from "../src/testing/mod.ts";

const CONTEXT = 65536; // vLLM --max-model-len
const WINDOW = 64000; // what Hermes 0.18.2 and 0.19.0 compute for a 65,536-token model
const TURNS = 12;
const TOOL_OUTPUT = "lorem ipsum dolor sit amet ".repeat(900); // ~6,100 tokens a turn

await using upstream = await serveFakeUpstream({
  maxModelLen: CONTEXT,
  model: "Qwen/Qwen3-8B",
});
await using cache = createCountCache();
const proxy = createProxyHandler({
  upstream: upstream.url,
  window: WINDOW,
  contextLength: CONTEXT,
  backend: new VllmBackend({ url: upstream.tokenizeUrl, cache }),
  cache,
});
await using server = Deno.serve({
  hostname: "127.0.0.1",
  port: 0,
  onListen() {},
}, proxy);
const base = `http://127.0.0.1:${server.addr.port}`;

console.log(
  `incontext demo: window W=${WINDOW}, context C=${CONTEXT}, minimum output R=4096`,
);
console.log(`upstream ${upstream.url} (vLLM protocol), proxy ${base}\n`);
console.log(
  "| turn | prompt tokens | max_tokens sent | action | source | status |",
);
console.log("| ---: | ---: | ---: | --- | --- | ---: |");

const messages: unknown[] = [{
  role: "system",
  content: "You are a coding agent.",
}];
for (let turn = 1; turn <= TURNS; turn++) {
  messages.push({
    role: "user",
    content: `Tool output of step ${turn}: ${TOOL_OUTPUT}`,
  });
  const response = await fetch(`${base}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      model: "Qwen/Qwen3-8B",
      max_tokens: 65536,
      messages,
    }),
  });
  const header = (name: string) =>
    response.headers.get(`x-incontext-${name}`) ?? "-";
  console.log(
    `| ${turn} | ${header("prompt-tokens")} | ${header("max-tokens")} | ${
      header("action")
    } | ${header("source")} | ${response.status} |`,
  );
  const body = await response.json();
  if (!response.ok) {
    console.log(
      `\nturn ${turn}: ${body.error.code}: the host must compress now (Hermes does, on this answer).`,
    );
    break;
  }
  messages.push(body.choices[0].message);
}

console.log(
  "\nset: max_tokens = W - P exactly. compress: less than R was left below W, so the cap is clamped to",
  "\nR (or C - P, when less is left), which keeps room for the compression request, and the host is",
  "\ntold to compress; when nothing is left below C, 400.",
  '\n\nNext, the proxy as a process, in front of a stand-in for vLLM (README.md, "Try the proxy"):',
  "\n  npx --yes deno@2.9.6 task demo-upstream   # a vLLM stand-in on 127.0.0.1:8000",
  "\n  then the proxy in front of it with `task serve`, and a request with curl.",
);
