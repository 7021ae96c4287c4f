import { ok, strictEqual } from "node:assert/strict";
import { serveFakeUpstream } from "../testing.ts";

const SERVER = new URL("../examples/server.ts", import.meta.url).pathname;
const CONFIG = new URL("../deno.json", import.meta.url).pathname;

function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr as Deno.NetAddr;
  listener.close();
  return port;
}

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

/** Collects a child's output as it arrives, so the child never blocks on a full pipe. */
function collect(stream: ReadableStream<Uint8Array>) {
  let text = "";
  const waiters: (() => void)[] = [];
  const done = (async () => {
    for await (const chunk of stream.pipeThrough(new TextDecoderStream())) {
      text += chunk;
      waiters.splice(0).forEach((wake) => wake());
    }
    waiters.splice(0).forEach((wake) => wake());
  })();
  return {
    done,
    get text() {
      return text;
    },
    /** Resolves once `pattern` appears, or the stream ends. */
    async waitFor(pattern: RegExp): Promise<string> {
      let ended = false;
      done.then(() => ended = true);
      while (!pattern.test(text) && !ended) {
        await new Promise<void>((wake) => waiters.push(wake));
      }
      return text;
    },
  };
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

Deno.test("examples/server.ts takes the window from a Hermes config.yaml", async () => {
  await using upstream = await serveFakeUpstream({ maxModelLen: 65536 });
  const port = freePort();
  const hermes =
    new URL("./fixtures/hermes/local_vllm.yaml", import.meta.url).pathname;
  const child = server([
    "--upstream",
    upstream.url,
    "--listen",
    `127.0.0.1:${port}`,
    "--hermes-config",
    hermes,
  ], {
    INCONTEXT_TOKENIZER_URL: upstream.tokenizeUrl,
  });
  const stdout = collect(child.stdout);
  const stderr = collect(child.stderr);
  const started = await stdout.waitFor(/listening on/);
  ok(/window=\d+/.test(started), started);
  const context =
    await (await fetch(`http://127.0.0.1:${port}/incontext/context`)).json();
  ok(context.window > 0 && context.window <= context.contextLength);
  child.kill("SIGTERM");
  const status = await child.status;
  await stdout.done;
  await stderr.done;
  strictEqual(status.code, 0, stderr.text);
});
