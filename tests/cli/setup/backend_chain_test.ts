// Covers: src/cli/setup/backend_chain.ts, src/cli/check/command.ts
import { notStrictEqual, ok } from "node:assert/strict";
import { serveFakeUpstream } from "../../../src/testing/mod.ts";
import { runCli } from "../../_kit/cli_process.ts";

/** Each bundled backend's name, and the source it counts under. */
const BUNDLED: [string, string][] = [
  ["vllm", "vllm-tokenize"],
  ["local", "local-tokenizer"],
  ["anchored", "usage-anchor"],
  ["llamacpp", "llamacpp-tokenize"],
  ["tgi", "tgi-chat-tokenize"],
  ["sglang", "sglang-tokenize"],
  ["anthropic", "anthropic-count-tokens"],
  ["gemini", "gemini-count-tokens"],
  ["openai", "openai-input-tokens"],
];

// The command selects the backend through the bundled registry, which
// imports the named backend's module on first use.
Deno.test("incontext check selects every bundled backend by its name", async (t) => {
  await using upstream = await serveFakeUpstream({ maxModelLen: 65536 });
  const env = {
    INCONTEXT_TOKENIZER_URL: upstream.tokenizeUrl,
    INCONTEXT_TOKENIZER_DIR:
      new URL("../../fixtures/model_folder/", import.meta.url).pathname,
    INCONTEXT_ANTHROPIC_API_KEY: "sk-ant-test",
    INCONTEXT_GEMINI_API_KEY: "gemini-test",
    INCONTEXT_CONTEXT_LENGTH: "65536",
    INCONTEXT_COMPRESSION_WINDOW_TOKENS: "55705",
  };
  for (const [name, source] of BUNDLED) {
    await t.step(name, async () => {
      const output = await runCli(["check"], {
        env: { ...env, INCONTEXT_BACKEND: name },
      });
      // 0 or 1 (exact or not against the fake server), never a bad setting.
      notStrictEqual(output.code, 2, output.stderr);
      // Log lines of the loaded tokenizer files may come first.
      const line = output.stdout.split("\n")
        .find((line) => line.startsWith("backend:"));
      ok(
        line?.startsWith(`backend:        ${name} (counts as ${source})`),
        output.stdout + output.stderr,
      );
    });
  }
});
