import { ok, strictEqual } from "node:assert/strict";
import { createHash } from "node:crypto";
import { serveFakeUpstream } from "../../src/testing/mod.ts";
import { collect, freePort } from "../_kit/cli_process.ts";

const SERVER = new URL("../../examples/server.ts", import.meta.url).pathname;
const CONFIG = new URL("../../deno.json", import.meta.url).pathname;

function server(
  args: string[],
  env: Record<string, string>,
): Deno.ChildProcess {
  return new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--config", CONFIG, SERVER, ...args],
    env: { NO_COLOR: "1", ...env },
    clearEnv: true,
    stdout: "piped",
    stderr: "piped",
  }).spawn();
}

Deno.test("examples/server.ts serves the proxy from flags and env, and stops on SIGTERM", async () => {
  await using upstream = await serveFakeUpstream({ maxModelLen: 65536 });
  const port = freePort();
  const child = server([
    "--upstream",
    upstream.url,
    "--listen",
    `127.0.0.1:${port}`,
  ], {
    INCONTEXT_TOKENIZER_URL: upstream.tokenizeUrl,
    INCONTEXT_MODEL: "m",
    INCONTEXT_CONTEXT_LENGTH: "65536",
    INCONTEXT_COMPRESSION_WINDOW_TOKENS: "55705",
  });
  const stdout = collect(child.stdout);
  const stderr = collect(child.stderr);
  const started = await stdout.waitFor(/listening on/);
  ok(started.includes(`listening on http://127.0.0.1:${port}`), started);
  const response = await fetch(`http://127.0.0.1:${port}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      model: "m",
      max_tokens: 65536,
      messages: [{ role: "user", content: "Hi" }],
    }),
  });
  strictEqual(response.status, 200);
  strictEqual(response.headers.get("x-incontext-action"), "set");
  await response.body?.cancel();
  const other = await fetch(`http://127.0.0.1:${port}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: "other", messages: [] }),
  });
  strictEqual(other.headers.get("x-incontext-action"), "unchanged"); // outside --model's route
  await other.body?.cancel();
  child.kill("SIGTERM");
  const status = await child.status;
  await stdout.done;
  await stderr.done;
  strictEqual(status.code, 0, stderr.text);
});

Deno.test("examples/server.ts --help prints every flag and variable", async () => {
  const { code, stdout } = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--config", CONFIG, SERVER, "--help"],
  }).output();
  strictEqual(code, 0);
  const text = new TextDecoder().decode(stdout);
  for (
    const name of [
      "--upstream",
      "--listen",
      "--window",
      "--context-length",
      "--model",
      "--hermes-config",
      "--on-exhausted",
      "INCONTEXT_TOKENIZER_API_KEY",
      "INCONTEXT_MAX_REQUEST_BYTES",
      "INCONTEXT_ANCHOR_TOLERANCE",
    ]
  ) ok(text.includes(name), name);
});

Deno.test("examples/server.ts fails at start-up listing every bad setting", async () => {
  const { code, stderr } = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      "--config",
      CONFIG,
      SERVER,
      "--listen",
      "nowhere",
      "--window=-5",
    ],
    env: { NO_COLOR: "1", INCONTEXT_TOKENIZER_API_KEY: "sk-secret-canary" },
    clearEnv: true,
  }).output();
  strictEqual(code, 2);
  const text = new TextDecoder().decode(stderr);
  for (
    const expected of [
      "--listen (INCONTEXT_LISTEN)",
      "--window (INCONTEXT_COMPRESSION_WINDOW_TOKENS)",
      "INCONTEXT_TOKENIZER_URL",
      "INCONTEXT_UPSTREAM_URL",
    ]
  ) ok(text.includes(expected), `${expected} in ${text}`);
  ok(!text.includes("sk-secret-canary"));
});

Deno.test("examples/server.ts mirrors a named Hermes release where Hermes is not installed", async () => {
  await using upstream = await serveFakeUpstream({ maxModelLen: 65536 });
  const port = freePort();
  const hermes =
    new URL("../fixtures/hermes/local_vllm.yaml", import.meta.url).pathname;
  const child = server([
    "--upstream",
    upstream.url,
    "--listen",
    `127.0.0.1:${port}`,
    "--hermes-config",
    hermes,
    "--hermes-release",
    "2026-07",
  ], {
    INCONTEXT_TOKENIZER_URL: upstream.tokenizeUrl,
  });
  const stdout = collect(child.stdout);
  const stderr = collect(child.stderr);
  const started = await stdout.waitFor(/listening on/);
  ok(started.includes("window=64000 context_length=65536"), started);
  ok(started.includes("Hermes 2026-07 arithmetic"), started);
  const context =
    await (await fetch(`http://127.0.0.1:${port}/incontext/context`)).json();
  strictEqual(context.window, 64000);
  child.kill("SIGTERM");
  const status = await child.status;
  await stdout.done;
  await stderr.done;
  strictEqual(status.code, 0, stderr.text);
});

Deno.test("examples/server.ts with the local backend logs the files' SHA-256 at start-up and counts in the worker", async () => {
  await using upstream = await serveFakeUpstream({ maxModelLen: 65536 });
  const dir = new URL("../fixtures/model_folder/", import.meta.url).pathname;
  const bytes = await Deno.readFile(`${dir}tokenizer.json`);
  const sha = createHash("sha256").update(bytes).digest("hex");
  const port = freePort();
  const child = server([
    "--upstream",
    upstream.url,
    "--listen",
    `127.0.0.1:${port}`,
  ], {
    INCONTEXT_BACKEND: "local",
    INCONTEXT_TOKENIZER_DIR: dir,
    INCONTEXT_TOKENIZER_SHA256: sha.toUpperCase(),
    INCONTEXT_CONTEXT_LENGTH: "65536",
    INCONTEXT_COMPRESSION_WINDOW_TOKENS: "55705",
  });
  const stdout = collect(child.stdout);
  const stderr = collect(child.stderr);
  const started = await stdout.waitFor(/listening on/);
  ok(started.includes(`tokenizer.json sha256=${sha}`), started);
  ok(/chat template sha256=[0-9a-f]{64}/.test(started), started);
  ok(started.includes("backend=local-tokenizer"), started);
  const response = await fetch(`http://127.0.0.1:${port}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      model: "m",
      max_tokens: 65536,
      messages: [{ role: "user", content: "hello world" }],
    }),
  });
  strictEqual(response.status, 200);
  strictEqual(response.headers.get("x-incontext-action"), "set");
  await response.body?.cancel();
  child.kill("SIGTERM");
  const status = await child.status;
  await stdout.done;
  await stderr.done;
  strictEqual(status.code, 0, stderr.text);
});

for (const backend of ["local", "sglang"]) {
  Deno.test(`examples/server.ts with ${backend} exits with 2 at start-up when tokenizer.json is not the expected SHA-256`, async () => {
    const dir = new URL("../fixtures/model_folder/", import.meta.url).pathname;
    const wrong = "ab".repeat(32);
    const child = server([
      "--upstream",
      "http://127.0.0.1:9",
      "--listen",
      `127.0.0.1:${freePort()}`,
    ], {
      INCONTEXT_BACKEND: backend,
      INCONTEXT_TOKENIZER_URL: "http://127.0.0.1:9",
      INCONTEXT_TOKENIZER_DIR: dir,
      INCONTEXT_TOKENIZER_SHA256: wrong,
      INCONTEXT_CONTEXT_LENGTH: "65536",
      INCONTEXT_COMPRESSION_WINDOW_TOKENS: "55705",
    });
    const stdout = collect(child.stdout);
    const stderr = collect(child.stderr);
    const status = await child.status;
    await stdout.done;
    await stderr.done;
    strictEqual(status.code, 2, stderr.text);
    ok(!stdout.text.includes("listening on"), stdout.text);
    ok(
      stderr.text.includes(
        "  INCONTEXT_TOKENIZER_DIR cannot be loaded: tokenizer.json does not match the expected SHA-256",
      ),
      stderr.text,
    );
    ok(stderr.text.includes(wrong), stderr.text);
  });
}
