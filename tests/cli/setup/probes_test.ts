import { ok, strictEqual } from "node:assert/strict";
import {
  serveFakeUpstream,
  serveFakeVllmTokenizer,
} from "../../../src/testing/mod.ts";
import { freePort, runCli, spawnCli } from "../../_kit/cli_process.ts";

const WORKING = {
  INCONTEXT_CONTEXT_LENGTH: "65536",
  INCONTEXT_COMPRESSION_WINDOW_TOKENS: "55705",
};

/** The `check` report's line that starts with `name:`. */
function line(stdout: string, name: string): string {
  return stdout.split("\n").find((l) => l.startsWith(`${name}:`)) ?? "";
}

Deno.test("incontext check names the tokenizer URL and what went wrong there", async (t) => {
  await using upstream = await serveFakeUpstream({ maxModelLen: 65536 });
  const check = (url: string) =>
    runCli(["check"], { env: { ...WORKING, INCONTEXT_TOKENIZER_URL: url } });

  await t.step("/v1/tokenize: a 404, and where vLLM serves it", async () => {
    const output = await check(`${upstream.url}/v1/tokenize?key=sk-canary`);
    strictEqual(output.code, 1);
    strictEqual(
      line(output.stdout, "tokenizer"),
      `tokenizer:      ${upstream.url}/v1/tokenize answered HTTP 404 (vLLM serves /tokenize at the server root: ${upstream.url}/tokenize): requests would get the rough estimate`,
    );
    ok(!output.stdout.includes("sk-canary"), "the query stays out");
  });
  await t.step(
    "the server root without /tokenize: a 404, and the fix",
    async () => {
      const output = await check(upstream.url);
      strictEqual(
        line(output.stdout, "tokenizer"),
        `tokenizer:      ${upstream.url} answered HTTP 404 (vLLM serves /tokenize at the server root: ${upstream.url}/tokenize): requests would get the rough estimate`,
      );
    },
  );
  await t.step("a closed port: the connection is refused", async () => {
    const url = `http://127.0.0.1:${freePort()}/tokenize`;
    const output = await check(url);
    strictEqual(
      line(output.stdout, "tokenizer"),
      `tokenizer:      ${url}: connection refused (nothing listens on that port): requests would get the rough estimate`,
    );
  });
  await t.step("https to a server that speaks http: TLS", async () => {
    const url = `${upstream.url.replace("http:", "https:")}/tokenize`;
    const output = await check(url);
    ok(
      line(output.stdout, "tokenizer").startsWith(
        `tokenizer:      ${url}: TLS failed`,
      ),
      output.stdout,
    );
  });
  await t.step("an answer that is not vLLM's shape", async () => {
    await using html = await serveFakeVllmTokenizer({ fault: "non-json" });
    const output = await check(html.url);
    strictEqual(
      line(output.stdout, "tokenizer"),
      `tokenizer:      ${html.url} answered, but not as vLLM's /tokenize does (it returned a non-JSON response): requests would get the rough estimate`,
    );
  });
  await t.step("a server that holds the count: the timeout", async () => {
    await using slow = await serveFakeVllmTokenizer({ fault: "slow" });
    const output = await check(slow.url);
    strictEqual(
      line(output.stdout, "tokenizer"),
      `tokenizer:      ${slow.url}: no answer within 5 s (timeout): requests would get the rough estimate`,
    );
  });
});

Deno.test("incontext check compares the upstream's max_model_len with the context length", async (t) => {
  await using tokenizer = await serveFakeVllmTokenizer({ maxModelLen: 65536 });
  await using upstream = await serveFakeUpstream({
    maxModelLen: 32768,
    model: "Qwen/Qwen3-8B",
  });
  const env = { ...WORKING, INCONTEXT_TOKENIZER_URL: tokenizer.url };

  await t.step("another max_model_len: both numbers, exit 1", async () => {
    const output = await runCli(["check", "--upstream", upstream.url], { env });
    strictEqual(output.code, 1, output.stdout);
    strictEqual(
      line(output.stdout, "upstream"),
      `upstream:       ${upstream.url}/v1/models lists max_model_len 32768 for Qwen/Qwen3-8B, but the context length is 65536 (INCONTEXT_CONTEXT_LENGTH): set them equal`,
    );
  });
  await t.step("the upstream given with /v1: a 404, and its root", async () => {
    const output = await runCli(["check", "--upstream", `${upstream.url}/v1`], {
      env,
    });
    strictEqual(output.code, 1);
    strictEqual(
      line(output.stdout, "upstream"),
      `upstream:       ${upstream.url}/v1/v1/models answered HTTP 404: the upstream is the server root, without /v1: ${upstream.url}`,
    );
  });
  await t.step("a model it does not list", async () => {
    const output = await runCli([
      "check",
      "--upstream",
      upstream.url,
      "--model",
      "llama",
    ], { env });
    strictEqual(output.code, 1);
    strictEqual(
      line(output.stdout, "upstream"),
      `upstream:       ${upstream.url}/v1/models lists no model "llama", the one budgeted (--model (INCONTEXT_BUDGET_MODEL))`,
    );
  });
});

Deno.test("incontext serve warns at start-up when the upstream serves another context length", async () => {
  await using tokenizer = await serveFakeVllmTokenizer({ maxModelLen: 65536 });
  await using upstream = await serveFakeUpstream({ maxModelLen: 32768 });
  await using server = spawnCli([
    "serve",
    "--upstream",
    upstream.url,
    "--listen",
    `127.0.0.1:${freePort()}`,
  ], { env: { ...WORKING, INCONTEXT_TOKENIZER_URL: tokenizer.url } });
  const log = await server.stderr.waitFor(/upstream at start-up/);
  ok(
    log.includes(
      `upstream at start-up: ${upstream.url}/v1/models lists max_model_len 32768 for fake-model, but the context length is 65536 (INCONTEXT_CONTEXT_LENGTH): set them equal`,
    ),
    log,
  );
  server.child.kill("SIGTERM");
  strictEqual((await server.child.status).code, 0);
});
