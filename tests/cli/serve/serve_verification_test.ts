// Covers: src/cli/serve/command.ts, src/config/backend_choice.ts, src/proxy/verification.ts
/**
 * Exact by proof through the real `incontext serve`: given the model folder
 * and vLLM's /tokenize, and no backend, it counts locally with vllm behind;
 * a local count the server's usage contradicts is reported and the model
 * moves to /tokenize, and back after INCONTEXT_BACKEND_FALLBACK_TURNS.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import { dirname } from "node:path";
import { LocalBackend } from "../../../src/backends/local/mod.ts";
import { serveFakeUpstream } from "../../../src/testing/mod.ts";
import { MODEL_FILES } from "../../_kit/model_files.ts";
import { until } from "../../_kit/hang.ts";
import { postJson } from "../../_kit/proxy_fixture.ts";
import { spawnProxy } from "../../reliability/_proxy_spawn.ts";

const QWEN3 = dirname(
  MODEL_FILES.find((model) => model.family === "qwen3")!.tokenizerPath,
);

const TURN = {
  model: "m",
  messages: [{
    role: "user",
    content: "Name three rivers of Europe, in one line each. ".repeat(3),
  }],
};

Deno.test("incontext serve with a model folder and /tokenize counts locally, and moves a contradicted model to vllm", async () => {
  await using upstream = await serveFakeUpstream();
  // The fake counts by its own rule: the premise is that the folder does not.
  const local = new LocalBackend({ dir: QWEN3, cache: null });
  const counted = await local.count(TURN, { contextLength: 65536 });
  await local[Symbol.asyncDispose]();
  const served = (await (await postJson(upstream.tokenizeUrl, TURN)).json())
    .count;
  ok(counted !== served, `${counted} and ${served} differ`);
  await using proxy = await spawnProxy(upstream.url, {
    INCONTEXT_TOKENIZER_DIR: QWEN3,
    INCONTEXT_TOKENIZER_URL: upstream.tokenizeUrl,
    INCONTEXT_BACKEND_FALLBACK_TURNS: "1",
  });
  ok(
    proxy.stdout.text.includes("backend=local-tokenizer,vllm-tokenize"),
    proxy.stdout.text,
  );
  for (let i = 0; i < 3; i++) {
    const response = await postJson(`${proxy.url}/v1/chat/completions`, TURN);
    strictEqual(response.status, 200);
    await response.text();
  }
  const output = () => proxy.stdout.text + proxy.stderr.text;
  // The server writes its log without blocking: the lines come a little later.
  await until(
    () =>
      /model=m counts with local-tokenizer again/.test(output()) &&
      output().split("now counts with").length === 3,
    "the moves logged",
  );
  const moves = output().split("\n").filter((l) =>
    l.includes("model=m now counts with vllm-tokenize")
  );
  strictEqual(moves.length, 2, output());
  ok(
    moves[0]!.includes(`counted=${counted} usage=${served}`),
    moves[0],
  );
  const warnings = output().split("\n").filter((l) =>
    l.includes("count differs from the server's usage")
  );
  strictEqual(warnings.length, 1, output());
  ok(!output().includes("rivers"), "no prompt text in the log");
  const view = await (await fetch(`${proxy.url}/incontext/context`)).json();
  deepStrictEqual(
    view.decisions.map((d: { source: string }) => d.source),
    ["local-tokenizer", "vllm-tokenize", "local-tokenizer"],
  );
  deepStrictEqual(view.verification.models, [{
    model: "m",
    checked: 3,
    equal: 1,
    rate: 1 / 3,
    source: "local-tokenizer",
    lastDiffer: { source: "local-tokenizer", counted, served },
  }]);
  const metrics = await (await fetch(`${proxy.url}/incontext/metrics`)).text();
  ok(
    metrics.includes(
      'incontext_count_verifications_total{model="m",result="differ"} 2',
    ),
    metrics,
  );
  ok(
    metrics.includes(
      'incontext_count_verifications_total{model="m",result="equal"} 1',
    ),
    metrics,
  );
});
