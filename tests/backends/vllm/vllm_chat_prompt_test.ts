// Covers: src/backends/vllm/vllm_backend.ts, src/backends/_shared/chat_prompt.ts, src/backends/_shared/contradictions.ts, src/core/prompt_count.ts
/**
 * Where vLLM's `/tokenize` is known not to render the chat endpoint's
 * prompt (gpt-oss, rendered through Harmony; a model the server's usage
 * contradicts twice), the vllm backend calls its counts estimates and
 * says why, and budget() counts from the usage anchor instead.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import { join } from "node:path";
import { budget } from "../../../mod.ts";
import { VllmBackend, vllmFromConfig } from "../../../src/backends/vllm/mod.ts";
import { loadConfig } from "../../../src/config/mod.ts";
import { AnchorStore } from "../../../src/anchors/store.ts";
import { anchorEstimate } from "../../../src/anchors/keys.ts";
import { serveFakeVllmTokenizer } from "../../../src/testing/mod.ts";

const CONTEXT = 65536;
const TURN = [{ role: "user", content: "List the files." }];

/** A model folder holding only `config.json`, removed on disposal. */
async function folder(
  config: unknown,
): Promise<{ readonly dir: string } & AsyncDisposable> {
  const dir = await Deno.makeTempDir();
  await Deno.writeTextFile(join(dir, "config.json"), JSON.stringify(config));
  return {
    dir,
    [Symbol.asyncDispose]: () => Deno.remove(dir, { recursive: true }),
  };
}

Deno.test("VllmBackend counts by estimate where the chat endpoint renders gpt-oss through Harmony", async (t) => {
  await using server = await serveFakeVllmTokenizer({
    maxModelLen: CONTEXT,
    countTokens: () => 700,
  });
  const count = (backend: VllmBackend, model: string) =>
    backend.count({ model, messages: TURN }, { contextLength: CONTEXT });

  await t.step("vllmFromConfig() reads the folder's config.json", async () => {
    await using gptOss = await folder({ model_type: "gpt_oss" });
    const backend = vllmFromConfig(loadConfig({
      INCONTEXT_TOKENIZER_URL: server.url,
      INCONTEXT_TOKENIZER_DIR: gptOss.dir,
      INCONTEXT_CACHE_ENTRIES: "1",
    }));
    deepStrictEqual(await count(backend, "served"), {
      tokens: 700,
      estimatedTokens: 700,
      source: "vllm-tokenize-estimate",
    });
    ok(
      backend.estimateReason(undefined)?.startsWith(
        "config.json's model_type is gpt_oss",
      ),
    );
  });
  await t.step("a model name that says gpt-oss is enough", async () => {
    const backend = new VllmBackend({ url: server.url, cache: null });
    strictEqual(
      (await count(backend, "openai/gpt-oss-120b") as { source: string })
        .source,
      "vllm-tokenize-estimate",
    );
    ok(
      backend.estimateReason("openai/gpt-oss-120b")?.startsWith(
        "the model's name says gpt-oss",
      ),
    );
    strictEqual(await count(backend, "qwen3"), 700);
  });
  await t.step("the folder's model type wins over the name", async () => {
    await using qwen = await folder({ model_type: "qwen3" });
    const backend = vllmFromConfig(loadConfig({
      INCONTEXT_TOKENIZER_URL: server.url,
      INCONTEXT_TOKENIZER_DIR: qwen.dir,
    }));
    strictEqual(backend.estimateReason("gpt-oss-distilled"), undefined);
  });
});

Deno.test("VllmBackend counts a model by estimate once the server's usage contradicted two of its counts", async () => {
  await using server = await serveFakeVllmTokenizer({
    maxModelLen: CONTEXT,
    countTokens: () => 700,
  });
  const backend = new VllmBackend({ url: server.url, cache: null });
  const check = { model: "agent", source: "vllm-tokenize", served: 760 };
  backend.countChecked({ ...check, counted: 700 });
  strictEqual(backend.estimateReason("agent"), undefined, "one may be a fluke");
  backend.countChecked({ ...check, counted: 760 });
  strictEqual(backend.estimateReason("agent"), undefined);
  backend.countChecked({ ...check, counted: 700 });
  ok(
    backend.estimateReason("agent")?.includes(
      "contradicted 2 of its /tokenize counts",
    ),
  );
  strictEqual(backend.estimateReason("other"), undefined);
  const counted = await backend.count({ model: "agent", messages: TURN }, {
    contextLength: CONTEXT,
  });
  deepStrictEqual(counted, {
    tokens: 700,
    estimatedTokens: 700,
    source: "vllm-tokenize-estimate",
  });
});

Deno.test("budget() counts from the usage anchor in place of a count that is all estimate", async () => {
  await using server = await serveFakeVllmTokenizer({
    maxModelLen: CONTEXT,
    countTokens: () => 700,
  });
  const backend = new VllmBackend({
    url: server.url,
    cache: null,
    modelType: "gpt_oss",
  });
  const anchors = new AnchorStore();
  anchors.record("gpt-oss-20b\nnull", TURN, {
    promptTokens: 900,
    completionTokens: 40,
  });
  const options = {
    window: 8000,
    contextLength: CONTEXT,
    backend,
    fallbackMarginTokens: 1024,
    anchor: (sent: Record<string, unknown>) => anchorEstimate(anchors, sent),
  };
  const first = await budget({ model: "gpt-oss-20b", messages: TURN }, options);
  strictEqual(first.source, "usage-anchor");
  strictEqual(first.promptTokens, 900);
  strictEqual(first.maxTokens, 8000 - 900);
  const fresh = await budget({
    model: "gpt-oss-20b",
    messages: [{ role: "user", content: "Another conversation." }],
  }, options);
  strictEqual(fresh.source, "vllm-tokenize-estimate");
  strictEqual(fresh.promptTokens, 700);
  strictEqual(fresh.maxTokens, 8000 - 700 - 700, "the margin: min(F, 700)");
});
