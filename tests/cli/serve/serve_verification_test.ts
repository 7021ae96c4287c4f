// Covers: src/cli/serve/command.ts, src/cli/serve/chain_moves.ts, src/config/backend_choice.ts, src/proxy/verification.ts
/**
 * Exact by proof through the real `incontext serve`: given the model folder
 * and vLLM's /tokenize, and no backend, it counts locally with vllm behind;
 * a local count the server's usage contradicts is reported and the model
 * moves to /tokenize, and back after INCONTEXT_BACKEND_FALLBACK_TURNS; each
 * move is counted in the metrics.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import { dirname } from "node:path";
import { LocalBackend } from "../../../src/backends/local/mod.ts";
import { serveFakeUpstream } from "../../../src/testing/mod.ts";
import { MODEL_FILES } from "../../_kit/model_files.ts";
import { postJson } from "../../_kit/proxy_fixture.ts";
import { WARNING_INTERVAL_MS } from "../../../src/_internal/log_limit.ts";
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
  const started = performance.now();
  for (let i = 0; i < 3; i++) {
    const response = await postJson(`${proxy.url}/v1/chat/completions`, TURN);
    strictEqual(response.status, 200);
    await response.text();
  }
  const view = await (await fetch(`${proxy.url}/incontext/context`)).json();
  const metrics = await (await fetch(`${proxy.url}/incontext/metrics`)).text();
  // The server writes its log without blocking: it is whole once it exits.
  proxy.child.kill("SIGTERM");
  strictEqual((await proxy.child.status).code, 0);
  // One line per cause, and one more per minute the requests took.
  const lines = 1 +
    Math.floor((performance.now() - started) / WARNING_INTERVAL_MS);
  const output = () => proxy.stdout.text + proxy.stderr.text;
  ok(/model=m counts with local-tokenizer again/.test(output()), output());
  // The second move between the same two backends, within the minute, is
  // counted and logged at debug.
  const moves = output().split("\n").filter((l) =>
    l.includes("model=m now counts with vllm-tokenize")
  );
  ok(moves.length >= 1 && moves.length <= lines, output());
  ok(
    moves[0]!.includes(`counted=${counted} usage=${served}`),
    moves[0],
  );
  for (
    const [from, to, count] of [
      ["local-tokenizer", "vllm-tokenize", 2],
      ["vllm-tokenize", "local-tokenizer", 1],
    ] as const
  ) {
    ok(
      metrics.includes(
        `incontext_backend_chain_moves_total{from="${from}",to="${to}"} ${count}`,
      ),
      metrics,
    );
  }
  const warnings = output().split("\n").filter((l) =>
    l.includes("count differs from the server's usage")
  );
  ok(warnings.length >= 1 && warnings.length <= lines, output());
  ok(!output().includes("rivers"), "no prompt text in the log");
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
