// Covers: src/cli/main.ts, src/cli/serve/command.ts, src/cli/check/command.ts, src/cli/count/command.ts
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import { serveFakeUpstream } from "../../src/testing/mod.ts";
import {
  collect,
  freePort,
  hasStackTrace,
  runCli,
  spawnCli,
} from "../_kit/cli_process.ts";

/** The issue lines of a configuration error, without the frame around them. */
function issueLines(stderr: string): string[] {
  return stderr.split("\n").filter((line) => line.startsWith("  "));
}

function assertConfigFailure(
  output: { code: number; stdout: string; stderr: string },
  expected: RegExp[],
): void {
  strictEqual(output.code, 2, output.stderr);
  ok(!hasStackTrace(output.stderr), output.stderr);
  ok(output.stderr.includes("invalid configuration"), output.stderr);
  const lines = issueLines(output.stderr);
  strictEqual(lines.length, expected.length, output.stderr);
  expected.forEach((pattern, i) => ok(pattern.test(lines[i]!), lines[i]));
}

const WORKING = {
  INCONTEXT_CONTEXT_LENGTH: "65536",
  INCONTEXT_COMPRESSION_WINDOW_TOKENS: "55705",
};

Deno.test("incontext serve reports every missing setting of an empty configuration at once", async () => {
  assertConfigFailure(await runCli(["serve"]), [
    /^ {2}INCONTEXT_UPSTREAM_URL is required/,
    /^ {2}INCONTEXT_TOKENIZER_URL is required by the 'vllm' backend/,
    /^ {2}INCONTEXT_COMPRESSION_WINDOW_TOKENS is unset/,
    /^ {2}INCONTEXT_CONTEXT_LENGTH is required/,
  ]);
});

Deno.test("incontext serve reports invalid and missing settings together, never their values", async () => {
  const output = await runCli(["serve", "--window", "soon"], {
    env: {
      INCONTEXT_CACHE_ENTRIES: "0",
      INCONTEXT_TOKENIZER_URL: "http://user:sk-canary@127.0.0.1:1/tokenize",
    },
  });
  assertConfigFailure(output, [
    /^ {2}INCONTEXT_UPSTREAM_URL is required/,
    /^ {2}--window \(INCONTEXT_COMPRESSION_WINDOW_TOKENS\) must be a positive integer/,
    /^ {2}INCONTEXT_TOKENIZER_URL /,
    /^ {2}INCONTEXT_CACHE_ENTRIES must be a positive integer/,
    /^ {2}INCONTEXT_CONTEXT_LENGTH is required/,
  ]);
  ok(!output.stderr.includes("sk-canary"));
});

Deno.test("incontext serve refuses a content format that is not auto, string or openai in one line", async () => {
  const output = await runCli(["serve"], {
    env: {
      ...WORKING,
      INCONTEXT_UPSTREAM_URL: "http://127.0.0.1:1",
      INCONTEXT_BACKEND: "local",
      INCONTEXT_TOKENIZER_DIR: "/nonexistent",
      INCONTEXT_CHAT_TEMPLATE_CONTENT_FORMAT: "parts",
    },
  });
  assertConfigFailure(output, [
    /^ {2}INCONTEXT_CHAT_TEMPLATE_CONTENT_FORMAT must be auto, string or openai$/,
  ]);
});

Deno.test("incontext serve names an unknown backend in one line, with the nearest and the known ones", async () => {
  const output = await runCli([
    "serve",
    "--backend",
    "vlm",
    "--upstream",
    "http://127.0.0.1:1",
  ], { env: WORKING });
  assertConfigFailure(output, [
    /^ {2}--backend \(INCONTEXT_BACKEND\) names no known backend \(did you mean 'vllm'\?\); use one of: vllm, local, anchored/,
  ]);
});

Deno.test("incontext serve says a Hermes config is missing without calling it unset", async () => {
  const output = await runCli([
    "serve",
    "--upstream",
    "http://127.0.0.1:1",
    "--hermes-config",
    "/nonexistent/.hermes/config.yaml",
  ], { env: { INCONTEXT_TOKENIZER_URL: "http://127.0.0.1:1/tokenize" } });
  assertConfigFailure(output, [
    /^ {2}--hermes-config \(INCONTEXT_HERMES_CONFIG\) must name a readable file \(ENOENT\)$/,
  ]);
});

Deno.test("incontext serve stops when the tokenizer's max_model_len contradicts the context length", async () => {
  await using upstream = await serveFakeUpstream({ maxModelLen: 32768 });
  const output = await runCli([
    "serve",
    "--upstream",
    upstream.url,
    "--listen",
    `127.0.0.1:${freePort()}`,
    "--context-length",
    "65536",
  ], {
    env: {
      INCONTEXT_TOKENIZER_URL: upstream.tokenizeUrl,
      INCONTEXT_COMPRESSION_WINDOW_TOKENS: "30000",
    },
  });
  assertConfigFailure(output, [
    /^ {2}--context-length is 65536 but vLLM max_model_len is 32768: set them equal$/,
  ]);
  ok(!output.stdout.includes("listening on"), output.stdout);
});

Deno.test("incontext serve names the address when its port is in use", async () => {
  await using upstream = await serveFakeUpstream({ maxModelLen: 65536 });
  using taken = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = taken.addr as Deno.NetAddr;
  const output = await runCli([
    "serve",
    "--upstream",
    upstream.url,
    "--listen",
    `127.0.0.1:${port}`,
  ], { env: { ...WORKING, INCONTEXT_TOKENIZER_URL: upstream.tokenizeUrl } });
  assertConfigFailure(output, [
    new RegExp(
      `^ {2}--listen \\(INCONTEXT_LISTEN\\) cannot listen on 127\\.0\\.0\\.1:${port}: the address is in use$`,
    ),
  ]);
  // The clear message is the only one: no log line of the failed listen.
  ok(!/\[ERR\]|server error/.test(output.stderr), output.stderr);
  ok(!/\[ERR\]|server error/.test(output.stdout), output.stdout);
});

Deno.test("incontext serve starts with a warning naming each URL when the tokenizer and the upstream do not answer", async () => {
  const port = freePort();
  const upstreamUrl = `http://127.0.0.1:${freePort()}`;
  const tokenizerUrl = `http://127.0.0.1:${freePort()}/tokenize`;
  await using server = spawnCli([
    "serve",
    "--upstream",
    upstreamUrl,
    "--listen",
    `127.0.0.1:${port}`,
  ], { env: { ...WORKING, INCONTEXT_TOKENIZER_URL: tokenizerUrl } });
  const started = await server.stdout.waitFor(/listening on/);
  ok(started.includes(`listening on http://127.0.0.1:${port}`), started);
  // Warnings go to standard error, which may arrive after standard output.
  const log = await server.stderr.waitFor(/upstream not reachable at start-up/);
  ok(
    log.includes(
      `tokenizer not counting at start-up: ${tokenizerUrl}: connection refused (nothing listens on that port)`,
    ),
    log,
  );
  ok(
    log.includes(
      `upstream not reachable at start-up: ${upstreamUrl}/v1/models: connection refused (nothing listens on that port)`,
    ),
    log,
  );
  // The start-up probe is what readiness reports; the process is alive.
  const live = await fetch(`http://127.0.0.1:${port}/incontext/livez`);
  strictEqual(live.status, 200);
  await live.body?.cancel();
  const ready = await fetch(`http://127.0.0.1:${port}/incontext/readyz`);
  strictEqual(ready.status, 503);
  const { status, tokenizer, upstream } = await ready.json();
  deepStrictEqual({ status, tokenizer, upstream }, {
    status: "not_ready",
    tokenizer: "unreachable",
    upstream: "unreachable",
  });
  server.child.kill("SIGTERM");
  strictEqual((await server.child.status).code, 0);
});

for (const signal of ["SIGTERM", "SIGINT"] as const) {
  Deno.test(`incontext serve stops cleanly on ${signal}`, async () => {
    await using upstream = await serveFakeUpstream({ maxModelLen: 65536 });
    const port = freePort();
    await using server = spawnCli([
      "serve",
      "--upstream",
      upstream.url,
      "--listen",
      `127.0.0.1:${port}`,
    ], { env: { ...WORKING, INCONTEXT_TOKENIZER_URL: upstream.tokenizeUrl } });
    const started = await server.stdout.waitFor(/listening on/);
    ok(
      started.includes(
        "window=55705 (INCONTEXT_COMPRESSION_WINDOW_TOKENS) context_length=65536 (INCONTEXT_CONTEXT_LENGTH)",
      ),
      started,
    );
    // The tokenizer's path is shown: a wrong one would be seen.
    ok(
      started.includes(
        `upstream=${upstream.url} tokenizer=${upstream.tokenizeUrl} `,
      ),
      started,
    );
    const response = await fetch(
      `http://127.0.0.1:${port}/v1/chat/completions`,
      {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          model: "m",
          max_tokens: 65536,
          messages: [{ role: "user", content: "Hi" }],
        }),
      },
    );
    strictEqual(response.headers.get("x-incontext-action"), "set");
    await response.body?.cancel();
    server.child.kill(signal);
    strictEqual((await server.child.status).code, 0);
  });
}

Deno.test("incontext with an unknown command exits 2 naming the nearest and the commands", async () => {
  const output = await runCli(["serv"]);
  strictEqual(output.code, 2);
  ok(
    /has an unknown command \(did you mean 'serve'\?\); use one of: serve, tokenize-server, check, count, demo-upstream/
      .test(output.stderr),
    output.stderr,
  );
});

Deno.test("incontext check says what it found and exits 0 only when budgeting is exact", async (t) => {
  await using upstream = await serveFakeUpstream({ maxModelLen: 65536 });
  await t.step("exact: both sides of the context length agree", async () => {
    const output = await runCli([
      "check",
      "--upstream",
      upstream.url,
    ], { env: { ...WORKING, INCONTEXT_TOKENIZER_URL: upstream.tokenizeUrl } });
    strictEqual(output.code, 0, output.stdout + output.stderr);
    const lines = output.stdout.trim().split("\n");
    ok(
      lines[0]!.startsWith(
        "backend:        vllm (counts as vllm-tokenize) at http://127.0.0.1:",
      ),
      lines[0],
    );
    strictEqual(
      lines[1],
      "why:            INCONTEXT_BACKEND is unset and only INCONTEXT_TOKENIZER_URL is set: vLLM's /tokenize counts; set INCONTEXT_TOKENIZER_DIR too to count in process",
    );
    strictEqual(
      lines[2],
      "window:         55705 tokens, from INCONTEXT_COMPRESSION_WINDOW_TOKENS",
    );
    strictEqual(
      lines[3],
      "context length: 65536 tokens, from INCONTEXT_CONTEXT_LENGTH; vLLM max_model_len agrees",
    );
    ok(
      /^tokenizer: +reachable: counted a probe request exactly \(\d+ tokens\)$/
        .test(lines[4]!),
      lines[4],
    );
    strictEqual(
      lines[5],
      `upstream:       reachable: GET ${upstream.url}/v1/models answered 200; max_model_len 65536 (fake-model) agrees`,
    );
    ok(lines[6]!.startsWith("Budgeting is exact"));
  });
  await t.step(
    "a contradicted context length: both numbers, exit 1",
    async () => {
      const output = await runCli(["check", "--context-length", "131072"], {
        env: {
          INCONTEXT_COMPRESSION_WINDOW_TOKENS: "55705",
          INCONTEXT_TOKENIZER_URL: upstream.tokenizeUrl,
        },
      });
      strictEqual(output.code, 1);
      ok(
        output.stdout.includes(
          "context length: 131072 tokens, from --context-length; but vLLM max_model_len is 65536: set them equal",
        ),
        output.stdout,
      );
      ok(
        output.stdout.includes(
          "upstream:       not given (--upstream): not checked",
        ),
        output.stdout,
      );
    },
  );
  await t.step("an unreachable tokenizer: exit 1", async () => {
    const output = await runCli(["check"], {
      env: {
        ...WORKING,
        INCONTEXT_TOKENIZER_URL: `http://127.0.0.1:${freePort()}/tokenize`,
      },
    });
    strictEqual(output.code, 1);
    ok(
      /tokenizer: +http:\/\/127\.0\.0\.1:\d+\/tokenize: connection refused \(nothing listens on that port\): requests would get the rough estimate$/m
        .test(output.stdout),
      output.stdout,
    );
    ok(output.stdout.includes("Budgeting would not be exact"));
  });
  await t.step("an unreachable upstream: exit 1", async () => {
    const output = await runCli([
      "check",
      "--upstream",
      `http://127.0.0.1:${freePort()}`,
    ], {
      env: { ...WORKING, INCONTEXT_TOKENIZER_URL: upstream.tokenizeUrl },
    });
    strictEqual(output.code, 1);
    ok(
      /upstream: +http:\/\/127\.0\.0\.1:\d+\/v1\/models: connection refused \(nothing listens on that port\): requests would get 502$/m
        .test(output.stdout),
      output.stdout,
    );
  });
  await t.step("a bad setting: exit 2 through the one error path", async () => {
    const output = await runCli(["check"], { env: WORKING });
    assertConfigFailure(output, [/^ {2}INCONTEXT_TOKENIZER_URL is required/]);
  });
});

Deno.test("incontext count prints what the proxy would do with a request from stdin or a file", async (t) => {
  await using upstream = await serveFakeUpstream({ maxModelLen: 65536 });
  const env = { ...WORKING, INCONTEXT_TOKENIZER_URL: upstream.tokenizeUrl };
  const request = {
    model: "m",
    max_tokens: 65536,
    messages: [{ role: "user", content: "Hi there" }],
  };
  await t.step("--json from stdin: the budget is W - P", async () => {
    const output = await runCli(["count", "--json"], {
      env,
      stdin: JSON.stringify(request),
    });
    strictEqual(output.code, 0, output.stderr);
    const decision = JSON.parse(output.stdout);
    strictEqual(decision.action, "set");
    strictEqual(decision.source, "vllm-tokenize");
    ok(decision.promptTokens > 0);
    strictEqual(decision.maxTokens, 55705 - decision.promptTokens);
    strictEqual(decision.request, undefined);
    deepStrictEqual(
      upstream.requests.filter((r) => r.path !== "/tokenize"),
      [],
    );
  });
  await t.step("text from --file", async () => {
    const file = new URL("../fixtures/cli/chat_request.json", import.meta.url);
    const output = await runCli(["count", "--file", file.pathname], { env });
    strictEqual(output.code, 0, output.stderr);
    ok(
      /^prompt tokens: \d+ \(vllm-tokenize\)$/m.test(output.stdout),
      output.stdout,
    );
    ok(/^decision: +set max_tokens=\d+$/m.test(output.stdout), output.stdout);
  });
  await t.step(
    "less than R left: the cap the proxy sends, or the 400 it answers",
    async () => {
      // W = 8000: a prompt of about 5,000 tokens leaves less than R below it.
      const tight = { ...env, INCONTEXT_COMPRESSION_WINDOW_TOKENS: "8000" };
      const sized = (characters: number) =>
        JSON.stringify({
          ...request,
          messages: [{ role: "user", content: "x".repeat(characters) }],
        });
      const clamped = JSON.parse(
        (await runCli(["count", "--json"], {
          env: tight,
          stdin: sized(20_000),
        })).stdout,
      );
      strictEqual(clamped.action, "compress");
      ok(clamped.maxTokens < 4096);
      strictEqual(clamped.sentMaxTokens, 4096);
      strictEqual(clamped.answer, undefined);
      const text = await runCli(["count"], {
        env: tight,
        stdin: sized(20_000),
      });
      ok(
        /^decision: +compress max_tokens=4096$/m.test(text.stdout),
        text.stdout,
      );
      for (
        const [variables, characters] of [
          [{ ...tight, INCONTEXT_ON_EXHAUSTED: "reject" }, 20_000],
          [tight, 250_000],
        ] as const
      ) {
        const output = await runCli(["count", "--json"], {
          env: variables,
          stdin: sized(characters),
        });
        strictEqual(output.code, 0, output.stderr);
        const answered = JSON.parse(output.stdout);
        strictEqual(answered.action, "compress");
        strictEqual(answered.sentMaxTokens, undefined);
        strictEqual(answered.answer.status, 400);
        strictEqual(answered.answer.error.code, "context_length_exceeded");
        ok(
          answered.answer.error.message.startsWith(
            "This model's maximum context length is 65536 tokens, and its compression window is 8000 tokens.",
          ),
        );
      }
      const refused = await runCli(["count"], {
        env: tight,
        stdin: sized(250_000),
      });
      ok(
        /^decision: +compress \(answered 400 context_length_exceeded, upstream not called\)$/m
          .test(refused.stdout),
        refused.stdout,
      );
      ok(
        /^answer: +This model's maximum context length is 65536/m.test(
          refused.stdout,
        ),
      );
      deepStrictEqual(
        upstream.requests.filter((r) => r.path !== "/tokenize"),
        [],
      );
    },
  );
  await t.step(
    "input that is not a JSON object: exit 1, input not quoted",
    async () => {
      const output = await runCli(["count"], {
        env,
        stdin: '["secret prompt"]',
      });
      strictEqual(output.code, 1);
      ok(
        output.stderr.includes("the input is not a JSON object"),
        output.stderr,
      );
      ok(!output.stderr.includes("secret prompt"));
    },
  );
});

Deno.test("incontext installed with deno install stops on SIGTERM sent to the command a supervisor runs", async () => {
  const root = await Deno.makeTempDir();
  try {
    const install = await new Deno.Command(Deno.execPath(), {
      args: [
        "install",
        "-g",
        "-A",
        "-n",
        "incontext",
        "--root",
        root,
        "--config",
        new URL("../../deno.json", import.meta.url).pathname,
        new URL("../../src/cli/mod.ts", import.meta.url).pathname,
      ],
      stdout: "null",
      stderr: "piped",
    }).output();
    strictEqual(install.code, 0, new TextDecoder().decode(install.stderr));
    await using upstream = await serveFakeUpstream({ maxModelLen: 65536 });
    const port = freePort();
    const denoDir = Deno.execPath().replace(/\/[^/]+$/, "");
    // The generated script, run as a supervisor runs it: its own PID gets the signal.
    const child = new Deno.Command(`${root}/bin/incontext`, {
      args: [
        "serve",
        "--upstream",
        upstream.url,
        "--listen",
        `127.0.0.1:${port}`,
      ],
      env: {
        ...WORKING,
        NO_COLOR: "1",
        PATH: `${denoDir}:${Deno.env.get("PATH") ?? ""}`,
        INCONTEXT_TOKENIZER_URL: upstream.tokenizeUrl,
      },
      clearEnv: true,
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const stdout = collect(child.stdout);
    const stderr = collect(child.stderr);
    await stdout.waitFor(/listening on/);
    child.kill("SIGTERM");
    const status = await child.status;
    await Promise.all([stdout.done, stderr.done]);
    strictEqual(status.code, 0, stderr.text);
    ok(
      /stopping: finishing requests in flight/.test(stdout.text + stderr.text),
    );
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("incontext tokenize-server reports a folder it cannot load and a port in use through the one error path", async (t) => {
  await t.step("a folder without tokenizer files", async () => {
    const empty = new URL("../fixtures/cli/", import.meta.url).pathname;
    const output = await runCli([
      "tokenize-server",
      "--model-dir",
      empty,
      "--max-model-len",
      "32768",
      "--listen",
      `127.0.0.1:${freePort()}`,
    ]);
    assertConfigFailure(output, [
      /^ {2}--model-dir \(INCONTEXT_TOKENIZER_DIR\) cannot be loaded: /,
    ]);
  });
  await t.step("a port in use", async () => {
    using taken = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const { port } = taken.addr as Deno.NetAddr;
    const output = await runCli([
      "tokenize-server",
      "--model-dir",
      new URL("../fixtures/model_folder/", import.meta.url).pathname,
      "--max-model-len",
      "32768",
      "--listen",
      `127.0.0.1:${port}`,
    ]);
    assertConfigFailure(output, [
      new RegExp(
        `^ {2}--listen cannot listen on 127\\.0\\.0\\.1:${port}: the address is in use$`,
      ),
    ]);
  });
});

Deno.test("incontext serve refuses a tokenizer mode the local backend cannot mirror in one line", async (t) => {
  const env = {
    ...WORKING,
    INCONTEXT_BACKEND: "local",
    INCONTEXT_UPSTREAM_URL: "http://127.0.0.1:1",
  };
  await t.step("a mode vLLM does not have", async () => {
    const output = await runCli(["serve"], {
      env: {
        ...env,
        INCONTEXT_TOKENIZER_DIR: "/nonexistent/model",
        INCONTEXT_VLLM_TOKENIZER_MODE: "deepseek",
      },
    });
    assertConfigFailure(output, [
      /^ {2}INCONTEXT_VLLM_TOKENIZER_MODE must be one of vLLM's tokenizer modes: auto, hf, /,
    ]);
  });
  await t.step("a Mistral folder that auto resolves to mistral", async () => {
    const dir = await Deno.makeTempDir();
    try {
      await Deno.writeTextFile(`${dir}/consolidated.safetensors`, "");
      await Deno.writeTextFile(`${dir}/tekken.json`, "{}");
      const output = await runCli(["serve"], {
        env: { ...env, INCONTEXT_TOKENIZER_DIR: dir },
      });
      assertConfigFailure(output, [
        /^ {2}INCONTEXT_TOKENIZER_DIR cannot be loaded: Cannot count with vLLM's tokenizer mode mistral \(auto, .*\) locally: vLLM renders and tokenizes with mistral_common; count with the vllm backend instead$/,
      ]);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  });
  await t.step("kimi_audio named for the tokenize server", async () => {
    const output = await runCli([
      "tokenize-server",
      "--model-dir",
      new URL("../fixtures/model_folder/", import.meta.url).pathname,
      "--max-model-len",
      "32768",
      "--tokenizer-mode",
      "kimi_audio",
      "--listen",
      `127.0.0.1:${freePort()}`,
    ]);
    assertConfigFailure(output, [
      /^ {2}--model-dir \(INCONTEXT_TOKENIZER_DIR\) cannot be loaded: Cannot count with vLLM's tokenizer mode kimi_audio locally: .*; count with the vllm backend instead$/,
    ]);
  });
});
