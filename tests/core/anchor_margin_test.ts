// Covers: src/core/budget.ts, src/core/prompt_count.ts, src/anchors/keys.ts
import { ok, strictEqual } from "node:assert/strict";
import { dirname } from "node:path";
import { budget } from "../../mod.ts";
import { AnchorStore } from "../../src/anchors/store.ts";
import { anchorEstimate } from "../../src/anchors/keys.ts";
import { roughEstimate } from "../../src/core/estimate.ts";
import { LocalBackend } from "../../src/backends/local/mod.ts";
import { FakeBackend } from "../../src/testing/mod.ts";
import { MODEL_FILES } from "../_kit/model_files.ts";

const QWEN3 = dirname(
  MODEL_FILES.find((model) => model.family === "qwen3")!.tokenizerPath,
);
const W = 8000;
const F = 1024;
const MODEL = "m";

Deno.test("budget() keeps the margin on the part of an anchored count that is estimated", async (t) => {
  // A compiler error: the rough estimate (characters / 4) is low for it.
  const output =
    "packages/engine/src/vllm/preprocess.ts:155:12 error TS2322: Type 'number' is not assignable to type 'string'.";
  const turn1 = [{ role: "user", content: "Build the project." }];
  const request = {
    model: MODEL,
    messages: [
      ...turn1,
      { role: "assistant", content: "Building." },
      { role: "user", content: output },
    ],
  };
  const anchors = new AnchorStore();
  anchors.record(`${MODEL}\nnull`, turn1, {
    promptTokens: 3000,
    completionTokens: 4,
  });
  const failing = new FakeBackend({ error: new Error("down") });
  const estimate = roughEstimate({ messages: [request.messages[2]] });
  const result = await budget(request, {
    window: W,
    contextLength: 8192,
    backend: failing,
    fallbackMarginTokens: F,
    anchor: (sent) => anchorEstimate(anchors, sent),
  });

  await t.step("the count is the anchor plus the estimate", () => {
    strictEqual(result.source, "usage-anchor");
    strictEqual(result.promptTokens, 3004 + estimate);
  });
  await t.step("the margin is min(F, the estimate)", () => {
    strictEqual(
      result.maxTokens,
      W - (3004 + estimate) - Math.min(F, estimate),
    );
  });
  await t.step("the estimate is low, and the margin covers it", async () => {
    await using local = new LocalBackend({ dir: QWEN3, cache: null });
    const real = await local.count(
      { prompt: output, add_special_tokens: false },
      { contextLength: 32768, kind: "completion" },
    );
    ok(real > estimate, `${real} > ${estimate}`);
    // Without the margin the cap would overrun the window by real - estimate.
    ok(3004 + real + result.maxTokens! <= W);
  });
  await t.step(
    "an anchor without an appended part keeps no margin",
    async () => {
      const whole = await budget({ model: MODEL, messages: turn1 }, {
        window: W,
        contextLength: 8192,
        backend: failing,
        fallbackMarginTokens: F,
        anchor: (sent) => anchorEstimate(anchors, sent),
      });
      strictEqual(whole.source, "usage-anchor");
      strictEqual(whole.maxTokens, W - 3000);
    },
  );
});
