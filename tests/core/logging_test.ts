// Covers: src/core/budget.ts, src/backends/vllm/vllm_backend.ts, src/config/mod.ts
import { ok, strictEqual } from "node:assert/strict";
import { budget } from "../../mod.ts";
import { createCountCache } from "../../src/cache/mod.ts";
import { VllmBackend } from "../../src/backends/vllm/mod.ts";
import { ConfigError, loadConfig } from "../../src/config/mod.ts";
import {
  type FakeVllmFault,
  serveFakeVllmTokenizer,
} from "../../src/testing/mod.ts";
import { captureLogs } from "../_kit/log_capture.ts";

const PROMPT = "CANARY-PROMPT-7f3a";
const KEY = "CANARY-KEY-91bc";
const URL_SECRET = "CANARY-URL-55de";
const TOOL = "CANARY-TOOL-0c2d";
const CANARIES = [PROMPT, KEY, URL_SECRET, TOOL];

function assertClean(texts: readonly string[]): void {
  for (const text of texts) {
    for (const canary of CANARIES) {
      ok(!text.includes(canary), `${canary} leaked into: ${text}`);
    }
  }
}

Deno.test("budget() never logs or returns prompts, keys, URLs or server error text", async () => {
  await using logs = await captureLogs();
  await using server = await serveFakeVllmTokenizer({ maxModelLen: 65536 });
  await using cache = createCountCache({ inProcess: true });
  const request = {
    model: "qwen",
    max_tokens: 65536,
    messages: [{ role: "user", content: `Please keep ${PROMPT} secret.` }],
    tools: [{
      type: "function",
      function: { name: "lookup", description: TOOL, parameters: {} },
    }],
  };
  const faults: FakeVllmFault[] = [
    "none",
    "http-500",
    "non-json",
    "non-object",
    "invalid-count",
    "wrong-max-model-len",
    "slow",
    "refused",
  ];
  const texts: string[] = [];
  for (const fault of faults) {
    server.fault = fault;
    const backend = new VllmBackend({
      url: `${server.url}?token=${URL_SECRET}`,
      apiKey: KEY,
      timeoutSeconds: 0.2,
      cache,
    });
    await backend.clearCache();
    try {
      await backend.count(request, { contextLength: 65536 });
    } catch (error) {
      // The whole chain: a host may log an error with its causes.
      for (let e: unknown = error; e !== undefined; e = (e as Error).cause) {
        texts.push(String(e), (e as Error).stack ?? "");
      }
    }
    for (const estimate of [undefined, () => Number.NaN]) {
      const result = await budget(request, {
        window: 55705,
        contextLength: 65536,
        backend,
        ...(estimate ? { estimate } : {}),
      });
      texts.push(result.reason, result.source);
      if (fault !== "none") {
        strictEqual(result.action, estimate ? "unchanged" : "set", fault);
      }
    }
  }
  server.fault = "none";
  ok(logs.lines.length >= faults.length, "the failure paths logged");
  ok(
    logs.lines.some((line) => line.includes("qwen")),
    "log lines name the model",
  );
  assertClean([...logs.lines, ...texts]);
  // the tokenizer got the key it is owed, and only as a bearer token
  ok(server.requests.some((r) => r.headers.authorization === `Bearer ${KEY}`));
});

Deno.test("loadConfig() never echoes a secret in its error", () => {
  try {
    loadConfig({
      INCONTEXT_TOKENIZER_URL: `http://user:${KEY}@host/tokenize#${URL_SECRET}`,
      INCONTEXT_TOKENIZER_API_KEY: `${KEY}\n`,
      INCONTEXT_MIN_OUTPUT_TOKENS: PROMPT,
    });
    ok(false, "expected a ConfigError");
  } catch (error) {
    ok(error instanceof ConfigError);
    assertClean([
      error.message,
      JSON.stringify(error.issues),
      String(error.stack),
    ]);
  }
});
