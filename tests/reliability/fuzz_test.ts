/**
 * Fuzzing budget() and the rough estimator over thousands of random request
 * objects. A fixed seed keeps CI deterministic; INCONTEXT_FUZZ_SEED runs (or
 * replays) another, and every failure names its seed and case.
 */
import { deepStrictEqual, fail } from "node:assert/strict";
import {
  budget,
  type BudgetOptions,
  type BudgetResult,
  type CapField,
  CountError,
  type JsonObject,
  type OutputFieldOptions,
  type OutputLimitOptions,
  roughEstimate,
} from "../../mod.ts";
import { VllmBackend } from "../../src/backends/vllm/mod.ts";
import { FakeBackend, type FakeBackendOptions } from "../../src/testing/mod.ts";
import { resultProblem } from "./_fuzz_invariants.ts";
import {
  int,
  mulberry32,
  pick,
  type Rand,
  randomRequest,
} from "./_fuzz_requests.ts";

const CASES = 20_000;
const SEED = Number(Deno.env.get("INCONTEXT_FUZZ_SEED") ?? 20261130);

/** A fake count with vLLM's reading of caps: lax integers, its field mapping, truncation. */
class VllmShapedFake extends FakeBackend {
  readonly #vllm = new VllmBackend({
    url: "http://127.0.0.1:9/tokenize",
    cache: null,
  });

  override coerceOutputBudget(value: unknown): number | undefined {
    return this.#vllm.coerceOutputBudget(value);
  }

  override outputBudgetField(
    field: CapField,
    options?: OutputFieldOptions,
  ): string {
    return this.#vllm.outputBudgetField(field, options);
  }

  override outputBudgetLimit(
    request: JsonObject,
    options: OutputLimitOptions,
  ): number | undefined {
    return this.#vllm.outputBudgetLimit(request, options);
  }
}

function randomBackend(rand: Rand, window: number): FakeBackend {
  const count = (): number =>
    pick(rand, [
      0,
      1,
      int(rand, window),
      int(rand, window * 1.2),
      window,
      -1,
      1.5,
      Number.NaN,
      Infinity,
      Number.MAX_SAFE_INTEGER,
    ]);
  const options: FakeBackendOptions = pick(rand, [
    () => ({ count: count() }),
    () => ({ count: () => Promise.resolve(count()) }),
    () => ({ error: new CountError("down") }),
    () => ({ error: new TypeError("broken") }),
    () => ({
      count: () => {
        throw "not an Error";
      },
    }),
    () => ({ count: () => "12" as unknown as number }),
  ])();
  if (rand() < 0.5) return new VllmShapedFake(options);
  if (rand() < 0.8) return new FakeBackend(options);
  const outputLimit = pick(rand, [
    0,
    1,
    100,
    5000,
    -5,
    1.5,
    Number.NaN,
    window,
  ]);
  return new FakeBackend({ ...options, outputLimit });
}

/** Valid options (window, margin and minimum as budget() requires), with random hooks. */
function randomOptions(rand: Rand): BudgetOptions {
  const window = 2 + int(rand, 200_000);
  const minOutputTokens = 1 + int(rand, Math.min(window - 1, 16_384));
  const options: Record<string, unknown> = {
    window,
    contextLength: window + int(rand, 100_000),
    fallbackMarginTokens: int(rand, window - minOutputTokens),
    minOutputTokens,
    backend: randomBackend(rand, window),
  };
  if (rand() < 0.2) {
    const estimate = pick(rand, [-5, 0, 1e9, Number.NaN, 12.5]);
    options.estimate = rand() < 0.2
      ? () => {
        throw new Error("estimator down");
      }
      : () => estimate;
  }
  if (rand() < 0.1) {
    const anchored = pick(rand, [undefined, 0, 100, -1, 1.5]);
    options.anchor = () => anchored;
  }
  if (rand() < 0.2) {
    options.kind = pick(rand, ["chat", "completion", "responses"]);
  }
  if (rand() < 0.1) options.defaultField = pick(rand, CAP_NAMES);
  if (rand() < 0.1) options.route = { model: pick(rand, ["m", "q"]) };
  if (rand() < 0.05) options.signal = AbortSignal.abort();
  return options as unknown as BudgetOptions;
}

const CAP_NAMES = ["max_tokens", "max_completion_tokens", "max_output_tokens"];

/** Why one case breaks an invariant, or undefined. */
async function check(rand: Rand): Promise<
  { problem?: string | undefined; request: unknown; result?: BudgetResult }
> {
  const { request, protoKeys } = randomRequest(rand);
  const options = randomOptions(rand);
  const json = JSON.stringify(request);
  const clone = structuredClone(request);
  let result: BudgetResult;
  try {
    result = await budget(request as JsonObject, options);
  } catch (error) {
    return { problem: `budget() threw ${errorName(error)}`, request };
  }
  if (typeof request === "object" && request !== null) {
    try {
      const estimate = roughEstimate(request as JsonObject);
      if (!Number.isSafeInteger(estimate) || estimate < 0) {
        return { problem: `roughEstimate() gave ${estimate}`, request };
      }
    } catch (error) {
      return { problem: `roughEstimate() threw ${errorName(error)}`, request };
    }
  }
  // structuredClone cannot keep an own __proto__ key: compare those as JSON.
  try {
    if (protoKeys) deepStrictEqual(JSON.stringify(request), json);
    else deepStrictEqual(request, clone);
  } catch {
    return { problem: "the input was mutated", request, result };
  }
  const problem = resultProblem(
    request,
    result,
    options.backend,
    options.minOutputTokens ?? 4096,
  );
  return { problem, request, result };
}

function errorName(error: unknown): string {
  return error instanceof Error ? error.name : typeof error;
}

function polluted(): boolean {
  const probe: Record<string, unknown> = {};
  return probe.polluted !== undefined || probe.max_tokens !== undefined ||
    probe.messages !== undefined || probe.extra_body !== undefined;
}

Deno.test("budget() keeps its promises over random requests (fuzz)", async () => {
  const rand = mulberry32(SEED);
  const tally = { set: 0, compress: 0, unchanged: 0 };
  const started = performance.now();
  for (let index = 0; index < CASES; index++) {
    const { problem, request, result } = await check(rand);
    const pollution = polluted() ? "Object.prototype was polluted" : undefined;
    if (problem !== undefined || pollution !== undefined) {
      fail(
        `fuzz seed ${SEED}, case ${index}: ${problem ?? pollution}\n` +
          `replay: INCONTEXT_FUZZ_SEED=${SEED} deno test --allow-env tests/reliability/fuzz_test.ts\n` +
          `request: ${JSON.stringify(request)?.slice(0, 2000)}\n` +
          `result: ${JSON.stringify(result)?.slice(0, 2000)}`,
      );
    }
    tally[result!.action]++;
  }
  console.log(
    `fuzz: seed ${SEED}, ${CASES} cases in ${
      Math.round(performance.now() - started)
    } ms (set ${tally.set}, compress ${tally.compress}, unchanged ${tally.unchanged}); exceptions 0, mutations 0, invalid caps 0`,
  );
});
