// Covers: src/cli/tokenize_server/settings.ts, src/backends/_shared/config.ts
//
// vLLM's --default-chat-template-kwargs as a setting, through real processes:
// a bad value stops `incontext serve` and `incontext tokenize-server` at
// start-up in one line naming it; a good one reaches every count.
import { ok, strictEqual } from "node:assert/strict";
import { freePort, hasStackTrace, runCli } from "../../_kit/cli_process.ts";
import { startTokenizeServer } from "../../reliability/serve/_process.ts";

const MODEL = new URL("../../fixtures/model_folder/", import.meta.url).pathname;
const VARIABLE = "INCONTEXT_DEFAULT_CHAT_TEMPLATE_KWARGS";

function assertOneLine(
  output: { code: number; stderr: string },
  pattern: RegExp,
): void {
  strictEqual(output.code, 2, output.stderr);
  ok(!hasStackTrace(output.stderr), output.stderr);
  const lines = output.stderr.split("\n").filter((line) =>
    line.startsWith("  ")
  );
  strictEqual(lines.length, 1, output.stderr);
  ok(pattern.test(lines[0]!), lines[0]);
}

Deno.test("incontext serve refuses default chat template kwargs that are not a JSON object in one line", async () => {
  for (const value of ['{"enable_thinking": fals', '["enable_thinking"]']) {
    const output = await runCli(["serve"], {
      env: {
        INCONTEXT_CONTEXT_LENGTH: "65536",
        INCONTEXT_COMPRESSION_WINDOW_TOKENS: "55705",
        INCONTEXT_UPSTREAM_URL: "http://127.0.0.1:1",
        INCONTEXT_BACKEND: "local",
        INCONTEXT_TOKENIZER_DIR: MODEL,
        [VARIABLE]: value,
      },
    });
    assertOneLine(
      output,
      new RegExp(`^ {2}${VARIABLE} must be a JSON object$`),
    );
    ok(!output.stderr.includes("enable_thinking"), output.stderr);
  }
});

Deno.test("incontext tokenize-server refuses default chat template kwargs that are not a JSON object in one line", async () => {
  const output = await runCli([
    "tokenize-server",
    "--model-dir",
    MODEL,
    "--max-model-len",
    "32768",
    "--listen",
    `127.0.0.1:${freePort()}`,
    "--default-chat-template-kwargs",
    "enable_thinking=false",
  ]);
  assertOneLine(
    output,
    new RegExp(
      `^ {2}--default-chat-template-kwargs \\(${VARIABLE}\\) must be a JSON object$`,
    ),
  );
});

Deno.test("incontext tokenize-server counts Qwen3 with enable_thinking off by default as vLLM serves it", async () => {
  const count = async (env: Record<string, string>, kwargs?: unknown) => {
    await using server = await startTokenizeServer(env);
    const response = await fetch(`${server.url}/tokenize`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        messages: [{ role: "user", content: "Hi" }],
        ...(kwargs === undefined ? {} : { chat_template_kwargs: kwargs }),
      }),
    });
    strictEqual(response.status, 200);
    return (await response.json()).count as number;
  };
  const off = { [VARIABLE]: '{"enable_thinking": false}' };
  const plain = await count({});
  // `<think>\n\n</think>\n\n`: the four tokens a server started with the
  // flag adds to every request.
  strictEqual(await count(off), plain + 4);
  strictEqual(await count(off, { enable_thinking: true }), plain);
  strictEqual(await count(off, { enable_thinking: null }), plain + 4);
});
