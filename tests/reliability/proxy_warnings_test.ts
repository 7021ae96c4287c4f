/**
 * Warnings are bounded by their cause, never by what clients choose: the
 * real `incontext serve`, counting with the model folder and vLLM's
 * /tokenize behind it, against an upstream whose usage differs from every
 * local count, gets 5,000 requests each naming a model of its own. Every
 * difference and every move along the chain is counted in the metrics; the
 * log holds one warning per cause, and at most one more per cause for each
 * interval the run lasted.
 */
import { ok, strictEqual } from "node:assert/strict";
import { dirname } from "node:path";
import { serveFakeUpstream } from "../../src/testing/mod.ts";
import { WARNING_INTERVAL_MS } from "../../src/_internal/log_limit.ts";
import { MODEL_FILES } from "../_kit/model_files.ts";
import { unlessHung } from "../_kit/hang.ts";
import { spawnProxy } from "./_proxy_spawn.ts";

const QWEN3 = dirname(
  MODEL_FILES.find((model) => model.family === "qwen3")!.tokenizerPath,
);

const MODELS = 5000;
const CLIENTS = 8;

/** The sum of a metric family's series whose labels include `labels`. */
function total(metrics: string, name: string, labels = ""): number {
  return metrics.split("\n")
    .filter((line) => line.startsWith(`${name}{`) && line.includes(labels))
    .reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(" "))), 0);
}

Deno.test("incontext serve warns once per cause, not once per client-chosen model, and counts every event", async () => {
  await using upstream = await serveFakeUpstream();
  await using proxy = await spawnProxy(upstream.url, {
    INCONTEXT_TOKENIZER_DIR: QWEN3,
    INCONTEXT_TOKENIZER_URL: upstream.tokenizeUrl,
  });
  ok(
    proxy.stdout.text.includes("backend=local-tokenizer,vllm-tokenize"),
    proxy.stdout.text,
  );
  const started = performance.now();
  let next = 0;
  const client = async () => {
    while (next < MODELS) {
      const model = `client-model-${next++}`;
      const response = await fetch(`${proxy.url}/v1/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          model,
          messages: [{
            role: "user",
            content: "Name three rivers of Europe, in one line each. ".repeat(
              3,
            ),
          }],
        }),
      });
      strictEqual(response.status, 200, model);
      await response.body?.cancel();
    }
  };
  await unlessHung(
    `${MODELS} requests`,
    Promise.all(Array.from({ length: CLIENTS }, client)),
  );
  const metrics = await (await fetch(`${proxy.url}/incontext/metrics`)).text();
  // The log is complete once the process has stopped.
  proxy.child.kill("SIGTERM");
  strictEqual((await unlessHung("the exit", proxy.child.status)).code, 0);
  const elapsed = performance.now() - started;
  const warnings = proxy.stderr.text.split("\n").filter((line) =>
    line.includes("[WRN]")
  );
  const differs = warnings.filter((l) => l.includes("count differs"));
  const moves = warnings.filter((l) => l.includes("now counts with"));
  console.log(
    `${MODELS} models in ${
      (elapsed / 1000).toFixed(1)
    } s: ${warnings.length} warning lines, ${differs.length} of differences, ${moves.length} of moves`,
  );
  const verifications = "incontext_count_verifications_total";
  strictEqual(total(metrics, verifications, 'result="differ"'), MODELS);
  strictEqual(total(metrics, verifications, 'result="equal"'), 0);
  strictEqual(
    total(
      metrics,
      "incontext_backend_chain_moves_total",
      'from="local-tokenizer",to="vllm-tokenize"',
    ),
    MODELS,
  );
  // One cause each (local-tokenizer, in one direction; one move), and one
  // warning more for each interval the run lasted, on a machine slow enough.
  const bound = 1 + Math.floor(elapsed / WARNING_INTERVAL_MS);
  ok(differs.length >= 1 && differs.length <= bound, differs.join("\n"));
  ok(moves.length >= 1 && moves.length <= bound, moves.join("\n"));
  strictEqual(
    warnings.length,
    differs.length + moves.length,
    warnings.join("\n"),
  );
});
