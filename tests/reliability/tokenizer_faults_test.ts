/**
 * Tokenizer faults: every way a `/tokenize` server or the network fails,
 * injected through a fake served on port 0. budget() must settle, never
 * throw, hand back a valid request, and take the rough fallback.
 */
import { ok, rejects, strictEqual, throws } from "node:assert/strict";
import {
  budget,
  type BudgetResult,
  CountError,
  type JsonObject,
} from "../../mod.ts";
import { createCountCache } from "../../src/cache/mod.ts";
import { VllmBackend } from "../../src/backends/vllm/mod.ts";
import {
  type FakeVllmFault,
  serveFakeVllmTokenizer,
} from "../../src/testing/mod.ts";
import { resultProblem } from "./_fuzz_invariants.ts";
import { GuardFired, settleWithin } from "./_tokenizer_guard.ts";
import { HANG_MS } from "../_kit/hang.ts";

const CONTEXT = 65_536;
const WINDOW = 55_705;
const MIN_OUTPUT = 4096;
const TIMEOUT_SECONDS = 0.5;
const GUARD_MS = HANG_MS;
// A fault that answers is judged by its answer, never by the clock: its
// timeout is the longest a timer can wait, so that no busy machine turns a
// slow answer (the oversized one streams a megabyte) into a timeout.
const ANSWERING_TIMEOUT_SECONDS = 2_147_483;
/** 64 KiB + 16 bytes per context token, at 65,536 tokens. */
const CAP_BYTES = 65_536 + 16 * CONTEXT;

/** Every fault, with what the count's CountError says about it. */
const FAULTS: readonly [FakeVllmFault, RegExp][] = [
  ["refused", /^vLLM \/tokenize request failed: TypeError$/],
  ["reset", /^vLLM \/tokenize request failed: TypeError$/],
  ["slow", /^vLLM \/tokenize did not answer within 0\.5 s$/],
  ["stalled", /^vLLM \/tokenize did not answer within 0\.5 s$/],
  ["http-429", /^vLLM \/tokenize answered HTTP 429$/],
  ["http-500", /^vLLM \/tokenize answered HTTP 500$/],
  ["http-503", /^vLLM \/tokenize answered HTTP 503$/],
  ["non-json", /^vLLM \/tokenize returned a non-JSON response$/],
  ["truncated-json", /^vLLM \/tokenize returned a non-JSON response$/],
  ["non-object", /^vLLM \/tokenize returned a non-object response$/],
  ["invalid-count", /^vLLM \/tokenize returned an invalid count$/],
  ["missing-count", /^vLLM \/tokenize returned an invalid count$/],
  ["negative-count", /^vLLM \/tokenize returned an invalid count$/],
  ["fractional-count", /^vLLM \/tokenize returned an invalid count$/],
  [
    "invalid-max-model-len",
    /^vLLM \/tokenize returned an invalid max_model_len$/,
  ],
  ["wrong-max-model-len", /^vLLM max_model_len does not match/],
  ["oversized", new RegExp(`^vLLM /tokenize answered more than ${CAP_BYTES}`)],
];

/** The faults whose calls end only at the timeout. */
const STALLING: ReadonlySet<FakeVllmFault> = new Set(["slow", "stalled"]);

/** Requests of every shape and kind of cap, made distinct by `n`. */
function requests(n: number): JsonObject[] {
  const user = (text: string) => [{ role: "user", content: `${text} #${n}` }];
  return [
    { model: "qwen", messages: user("no cap") },
    { model: "qwen", max_tokens: CONTEXT, messages: user("a large cap") },
    { model: "qwen", max_completion_tokens: 300, messages: user("small cap") },
    { model: "qwen", max_tokens: " 2_048 ", messages: user("a lax cap") },
    {
      model: "qwen",
      max_tokens: 9000,
      extra_body: { max_completion_tokens: 5000 },
      messages: user("caps at both levels"),
    },
    {
      model: "qwen",
      messages: user("tools"),
      tools: [{ type: "function", function: { name: "f", parameters: {} } }],
    },
    // About 56,000 tokens by the rough estimate: the host must compress.
    { model: "qwen", messages: user("word ".repeat(45_000)) },
    { model: "qwen", messages: user("truncated"), truncate_prompt_tokens: 6e4 },
    { model: "qwen", prompt: `Once upon a time #${n}`, max_tokens: 1000 },
    { model: "qwen", input: `Hello #${n}`, max_output_tokens: 8000 },
  ];
}

/** What the suite counts across faults. */
const tally = {
  faults: 0,
  calls: 0,
  hostExceptions: 0,
  invalidCaps: 0,
  otherPaths: 0,
};

interface Outcome {
  readonly result?: BudgetResult;
  readonly error?: unknown;
}

/** One budget() call under the guard; a GuardFired fails the test. */
async function guardedBudget(
  request: JsonObject,
  backend: VllmBackend,
): Promise<Outcome> {
  const calling = budget(request, {
    window: WINDOW,
    contextLength: CONTEXT,
    backend,
  });
  try {
    const result = await settleWithin(calling, GUARD_MS, "budget()");
    return { result };
  } catch (error) {
    if (error instanceof GuardFired) throw error;
    return { error };
  }
}

/** Counts each call in `tally` and says what it did wrong, if anything. */
function judge(
  batch: readonly JsonObject[],
  outcomes: readonly Outcome[],
  backend: VllmBackend,
): string[] {
  const problems: string[] = [];
  outcomes.forEach(({ result, error }, index) => {
    tally.calls++;
    if (result === undefined) {
      tally.hostExceptions++;
      problems.push(`call ${index} threw ${(error as Error)?.name}`);
      return;
    }
    const problem = resultProblem(batch[index], result, backend, MIN_OUTPUT);
    if (problem !== undefined) {
      tally.invalidCaps++;
      problems.push(`call ${index}: ${problem}`);
    }
    if (result.source !== "rough-fallback" || result.action === "unchanged") {
      tally.otherPaths++;
      problems.push(`call ${index}: ${result.action} by ${result.source}`);
    }
  });
  return problems;
}

Deno.test("budget() survives every tokenizer fault with the rough fallback", async (t) => {
  for (const [fault, message] of FAULTS) {
    await t.step(fault, async () => {
      await using server = await serveFakeVllmTokenizer({
        maxModelLen: CONTEXT,
      });
      await using cache = createCountCache();
      // The worker starts once per process, not per count: start it before the clock runs.
      await cache.stats();
      server.fault = fault;
      const backend = new VllmBackend({
        url: server.url,
        timeoutSeconds: STALLING.has(fault)
          ? TIMEOUT_SECONDS
          : ANSWERING_TIMEOUT_SECONDS,
        cache,
      });
      const batch = [...requests(0), ...requests(1)];
      const [failure, ...outcomes] = await Promise.all([
        settleWithin(
          backend.count({ messages: [] }, { contextLength: CONTEXT }).then(
            () => undefined,
            (error: unknown) => error,
          ),
          GUARD_MS,
          "count()",
        ),
        ...batch.map((request) => guardedBudget(request, backend)),
      ]);
      // The fault is the one injected: the count fails for its reason.
      ok(failure instanceof CountError, `${fault}: ${failure}`);
      ok(message.test(failure.message), `${fault}: ${failure.message}`);
      // Every request reached the server, except where the fault is that none
      // can; a timed-out client may leave before the server has read its body.
      const reached = server.requests.length;
      if (fault === "refused") strictEqual(reached, 0);
      else if (STALLING.has(fault)) ok(reached > 0);
      else strictEqual(reached, batch.length + 1);
      tally.faults++;
      const problems = judge(batch, outcomes, backend);
      strictEqual(problems.join("\n"), "", fault);
    });
  }

  await t.step("summary", () => {
    console.log(
      `tokenizer faults: ${tally.faults} tried, ${tally.calls} budget() calls, host exceptions ${tally.hostExceptions}, invalid caps ${tally.invalidCaps}, other paths ${tally.otherPaths}`,
    );
    strictEqual(tally.faults, FAULTS.length);
    strictEqual(tally.hostExceptions, 0);
    strictEqual(tally.invalidCaps, 0);
    strictEqual(tally.otherPaths, 0);
  });
});

/** A body of 64 KiB chunks that counts what was pulled and whether it was cancelled. */
function countedBody(chunks: number) {
  const chunk = new Uint8Array(65_536).fill(0x20);
  const seen = { pulled: 0, cancelled: false };
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (seen.pulled >= chunks * chunk.length) return controller.close();
      seen.pulled += chunk.length;
      controller.enqueue(chunk);
    },
    cancel() {
      seen.cancelled = true;
    },
  }, { highWaterMark: 0 });
  return { body, seen };
}

function answering(response: Response): VllmBackend {
  return new VllmBackend({
    url: "http://127.0.0.1:8000/tokenize",
    cache: null,
    fetch: () => Promise.resolve(response),
  });
}

const HELLO = { messages: [{ role: "user", content: "Hello" }] };

Deno.test("VllmBackend.count() reads at most 64 KiB + 16 bytes per context token", async (t) => {
  await t.step("an answer of exactly the cap is read", async () => {
    const json = JSON.stringify({ count: 5, max_model_len: CONTEXT });
    // JSON allows trailing whitespace: the padding keeps the answer valid.
    const body = json + " ".repeat(CAP_BYTES - json.length);
    const counted = await answering(new Response(body)).count(HELLO, {
      contextLength: CONTEXT,
    });
    strictEqual(counted, 5);
  });

  await t.step("a declared length over the cap is refused unread", async () => {
    const { body, seen } = countedBody(1);
    const response = new Response(body, {
      headers: { "content-length": String(CAP_BYTES + 1) },
    });
    await rejects(
      answering(response).count(HELLO, { contextLength: CONTEXT }),
      new CountError(`vLLM /tokenize answered more than ${CAP_BYTES} bytes`),
    );
    strictEqual(seen.pulled, 0);
    ok(seen.cancelled);
  });

  await t.step("an endless body is cancelled once past the cap", async () => {
    const { body, seen } = countedBody(Infinity);
    const counting = answering(new Response(body)).count(HELLO, {
      contextLength: CONTEXT,
    });
    await rejects(
      settleWithin(counting, GUARD_MS, "count()"),
      new CountError(`vLLM /tokenize answered more than ${CAP_BYTES} bytes`),
    );
    ok(seen.pulled > CAP_BYTES, `${seen.pulled}`);
    ok(seen.pulled <= CAP_BYTES + 65_536, `${seen.pulled}`);
    ok(seen.cancelled);
  });

  await t.step("the cap follows the context length", async () => {
    const { body } = countedBody(2);
    await rejects(
      answering(new Response(body)).count(HELLO, { contextLength: 1 }),
      new CountError("vLLM /tokenize answered more than 65552 bytes"),
    );
  });
});

Deno.test("serveFakeVllmTokenizer() breaks answers on demand", async (t) => {
  await using server = await serveFakeVllmTokenizer({ maxModelLen: CONTEXT });
  const post = () =>
    fetch(server.url, { method: "POST", body: JSON.stringify(HELLO) });

  await t.step("oversized: a valid answer, only too large", async () => {
    server.fault = "oversized";
    const response = await post();
    strictEqual(response.headers.get("content-length"), null);
    const text = await response.text();
    ok(text.length > CAP_BYTES, `${text.length}`);
    const answer = JSON.parse(text);
    strictEqual(answer.max_model_len, CONTEXT);
    ok(Number.isSafeInteger(answer.count) && answer.count >= 0);
  });

  await t.step("truncated-json: a prefix of a valid answer", async () => {
    server.fault = "truncated-json";
    const text = await (await post()).text();
    ok(text.startsWith('{"count":'), text);
    ok(text.length > 10);
    throws(() => JSON.parse(text), SyntaxError);
  });

  await t.step(
    "reset: headers and a prefix, then a broken connection",
    async () => {
      server.fault = "reset";
      const response = await post();
      strictEqual(response.status, 200);
      await rejects(response.text(), TypeError);
    },
  );

  for (const status of [429, 503] as const) {
    await t.step(`http-${status}: vLLM's error shape`, async () => {
      server.fault = `http-${status}`;
      const response = await post();
      strictEqual(response.status, status);
      strictEqual((await response.json()).code, status);
    });
  }
});
