import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import OpenAI from "openai";
import {
  freePort,
  hasStackTrace,
  runCli,
  spawnCli,
} from "../../_kit/cli_process.ts";

const JSON_POST = { "content-type": "application/json" };

Deno.test("incontext demo-upstream serves vLLM's protocol on the address given, and stops on SIGTERM", async (t) => {
  const port = freePort();
  await using demo = spawnCli([
    "demo-upstream",
    "--listen",
    `127.0.0.1:${port}`,
    "--max-model-len",
    "8192",
    "--model",
    "Qwen/Qwen3-8B",
  ]);
  const started = await demo.stdout.waitFor(/Put the proxy in front/);
  ok(
    started.includes(
      `incontext demo upstream listening on http://127.0.0.1:${port}: model=Qwen/Qwen3-8B max_model_len=8192`,
    ),
    started,
  );
  ok(
    started.includes(
      `INCONTEXT_TOKENIZER_URL=http://127.0.0.1:${port}/tokenize`,
    ),
    started,
  );
  const root = `http://127.0.0.1:${port}`;
  const messages = [{ role: "user", content: "Hello there" }];

  await t.step("GET /v1/models, /version and /health", async () => {
    const models = await (await fetch(`${root}/v1/models`)).json();
    strictEqual(models.data[0].id, "Qwen/Qwen3-8B");
    strictEqual(models.data[0].max_model_len, 8192);
    deepStrictEqual(await (await fetch(`${root}/version`)).json(), {
      version: "0.20.0",
    });
    const health = await fetch(`${root}/health`);
    strictEqual(health.status, 200);
    await health.body?.cancel();
  });

  await t.step(
    "/tokenize and usage count alike; /detokenize answers",
    async () => {
      const tokenized = await (await fetch(`${root}/tokenize`, {
        method: "POST",
        headers: JSON_POST,
        body: JSON.stringify({ model: "Qwen/Qwen3-8B", messages }),
      })).json();
      strictEqual(
        tokenized.count,
        Math.ceil(JSON.stringify(messages).length / 4),
      );
      strictEqual(tokenized.max_model_len, 8192);
      const client = new OpenAI({
        baseURL: `${root}/v1`,
        apiKey: "-",
        maxRetries: 0,
      });
      const chat = await client.chat.completions.create({
        model: "Qwen/Qwen3-8B",
        messages: [{ role: "user", content: "Hello there" }],
      });
      strictEqual(chat.choices[0]?.message.content, "Noted: 1 messages.");
      strictEqual(chat.usage?.prompt_tokens, tokenized.count);
      let streamed = "";
      let usage = 0;
      const stream = await client.chat.completions.create({
        model: "Qwen/Qwen3-8B",
        messages: [{ role: "user", content: "Hello there" }],
        stream: true,
        stream_options: { include_usage: true },
      });
      for await (const chunk of stream) {
        streamed += chunk.choices[0]?.delta.content ?? "";
        usage = chunk.usage?.prompt_tokens ?? usage;
      }
      strictEqual(streamed, "Noted: 1 messages.");
      strictEqual(usage, tokenized.count);
      const completion = await client.completions.create({
        model: "Qwen/Qwen3-8B",
        prompt: "Once upon a time",
      });
      strictEqual(completion.usage?.prompt_tokens, 4);
      const response = await client.responses.create({
        model: "Qwen/Qwen3-8B",
        input: "Hi",
      });
      ok(response.output_text.startsWith("Noted: "), response.output_text);
      const detokenized = await (await fetch(`${root}/detokenize`, {
        method: "POST",
        headers: JSON_POST,
        body: JSON.stringify({ tokens: [1, 2] }),
      })).json();
      deepStrictEqual(detokenized, { prompt: "<1><2>" });
    },
  );

  await t.step(
    "a prompt and cap beyond --max-model-len get vLLM's 400",
    async () => {
      const response = await fetch(`${root}/v1/chat/completions`, {
        method: "POST",
        headers: JSON_POST,
        body: JSON.stringify({ model: "m", max_tokens: 8192, messages }),
      });
      strictEqual(response.status, 400);
      ok(
        (await response.json()).error.message.startsWith(
          "This model's maximum context length is 8192 tokens.",
        ),
      );
    },
  );

  demo.child.kill("SIGTERM");
  strictEqual((await demo.child.status).code, 0);
  strictEqual(demo.stderr.text, "");
});

Deno.test("incontext demo-upstream --tool-calls calls the first tool every 3 user turns, so that an agent loop can be tried", async () => {
  const port = freePort();
  await using demo = spawnCli([
    "demo-upstream",
    "--listen",
    `127.0.0.1:${port}`,
    "--tool-calls",
  ]);
  const started = await demo.stdout.waitFor(/Put the proxy in front/);
  ok(started.includes("Every 3 user turns"), started);
  const client = new OpenAI({
    baseURL: `http://127.0.0.1:${port}/v1`,
    apiKey: "-",
    maxRetries: 0,
  });
  const tools = [{
    type: "function" as const,
    function: { name: "read_log", parameters: { type: "object" } },
  }];
  const messages: OpenAI.ChatCompletionMessageParam[] = [];
  const finishes: string[] = [];
  for (let turn = 1; turn <= 6; turn++) {
    messages.push({ role: "user", content: `turn ${turn}` });
    const chat = await client.chat.completions.create({
      model: "m",
      messages,
      tools,
    });
    const choice = chat.choices[0]!;
    finishes.push(choice.finish_reason);
    messages.push({ role: "assistant", content: "ok" });
  }
  deepStrictEqual(finishes, [
    "stop",
    "stop",
    "tool_calls",
    "stop",
    "stop",
    "tool_calls",
  ]);
  demo.child.kill("SIGTERM");
  strictEqual((await demo.child.status).code, 0);
});

Deno.test("incontext demo-upstream --help names its default address, vLLM's port", async () => {
  const output = await runCli(["demo-upstream", "--help"]);
  strictEqual(output.code, 0);
  ok(output.stdout.includes("default 127.0.0.1:8000"), output.stdout);
  ok(output.stdout.includes("--max-model-len N"), output.stdout);
  ok(output.stdout.includes("--tool-calls"), output.stdout);
});

Deno.test("incontext demo-upstream refuses a body over INCONTEXT_MAX_REQUEST_BYTES with 413", async () => {
  const port = freePort();
  await using demo = spawnCli([
    "demo-upstream",
    "--listen",
    `127.0.0.1:${port}`,
  ], {
    env: { INCONTEXT_MAX_REQUEST_BYTES: "1000" },
  });
  await demo.stdout.waitFor(/listening on/);
  const response = await fetch(`http://127.0.0.1:${port}/tokenize`, {
    method: "POST",
    headers: JSON_POST,
    body: JSON.stringify({
      messages: [{ role: "user", content: "x".repeat(2000) }],
    }),
  });
  strictEqual(response.status, 413);
  strictEqual((await response.json()).error.code, 413);
  const small = await fetch(`http://127.0.0.1:${port}/tokenize`, {
    method: "POST",
    headers: JSON_POST,
    body: JSON.stringify({ messages: [{ role: "user", content: "x" }] }),
  });
  strictEqual(small.status, 200);
  await small.body?.cancel();
});

Deno.test("incontext demo-upstream names every bad flag, and a port in use, through the one error path", async (t) => {
  await t.step("bad flags, one line each", async () => {
    const output = await runCli([
      "demo-upstream",
      "--max-model-len",
      "0",
      "--listen",
      "8000",
    ], { env: { INCONTEXT_MAX_CONNECTIONS: "many" } });
    strictEqual(output.code, 2);
    ok(!hasStackTrace(output.stderr), output.stderr);
    const lines = output.stderr.split("\n").filter((l) => l.startsWith("  "));
    deepStrictEqual(lines.map((l) => l.split(" ")[2]), [
      "--max-model-len",
      "--listen",
      "INCONTEXT_MAX_CONNECTIONS",
    ]);
  });
  await t.step("a port in use: the address, and nothing after it", async () => {
    using taken = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const { port } = taken.addr as Deno.NetAddr;
    const output = await runCli([
      "demo-upstream",
      "--listen",
      `127.0.0.1:${port}`,
    ]);
    strictEqual(output.code, 2);
    deepStrictEqual(output.stderr.trim().split("\n"), [
      "incontext demo-upstream: invalid configuration",
      `  --listen cannot listen on 127.0.0.1:${port}: the address is in use`,
      "Run with --help for every flag and variable.",
    ]);
  });
});
