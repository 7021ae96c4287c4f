// Covers: src/core/budget.ts, src/core/compute.ts
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import { budget, type BudgetOptions, type JsonObject } from "../../mod.ts";
import { FakeBackend } from "../../src/testing/mod.ts";

/** mulberry32: a small seeded PRNG, so a failure replays. */
function random(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const CAP_VALUES: unknown[] = [
  null,
  true,
  0,
  -3,
  1.5,
  "2048",
  1,
  7,
  300,
  4096,
  5000,
  65536,
  1_000_000,
];
const FIELDS = ["max_tokens", "max_completion_tokens", "max_output_tokens"];

function pick<T>(rand: () => number, items: readonly T[]): T {
  return items[Math.floor(rand() * items.length)]!;
}

function randomRequest(rand: () => number): JsonObject {
  const request: Record<string, unknown> = {
    model: "m",
    messages: Array.from({ length: 1 + Math.floor(rand() * 4) }, (_, i) => ({
      role: i % 2 ? "assistant" : "user",
      content: "word ".repeat(Math.floor(rand() * 50)),
    })),
  };
  if (rand() < 0.3) request.extra_body = {};
  for (const field of FIELDS) {
    if (rand() < 0.3) request[field] = pick(rand, CAP_VALUES);
    if (request.extra_body && rand() < 0.2) {
      (request.extra_body as Record<string, unknown>)[field] = pick(
        rand,
        CAP_VALUES,
      );
    }
  }
  return request;
}

/** The caller's cap as the default coercion reads it: positive integers only. */
function callerCap(request: JsonObject): number | undefined {
  const levels = [request, (request.extra_body ?? {}) as JsonObject];
  const caps = levels.flatMap((level) =>
    FIELDS.map((f) => level[f]).filter((v): v is number =>
      Number.isSafeInteger(v) && (v as number) > 0
    )
  );
  return caps.length ? Math.min(...caps) : undefined;
}

/** Whether a cap field holds what the default coercion refuses (not null, not a positive integer). */
function refusedCap(request: JsonObject): boolean {
  const levels = [request, (request.extra_body ?? {}) as JsonObject];
  return levels.some((level) =>
    FIELDS.some((f) =>
      Object.hasOwn(level, f) && level[f] !== null &&
      !(Number.isSafeInteger(level[f]) && (level[f] as number) > 0)
    )
  );
}

Deno.test("budget() keeps its invariants over random requests", async () => {
  const rand = random(20261130);
  for (let i = 0; i < 2000; i++) {
    const window = 2000 + Math.floor(rand() * 100_000);
    const margin = Math.floor(rand() * 500);
    const minimum = 1 + Math.floor(rand() * 1000);
    const failing = rand() < 0.25;
    const prompt = Math.floor(rand() * window * 1.1);
    const request = randomRequest(rand);
    const before = structuredClone(request);
    const options: BudgetOptions = {
      window,
      contextLength: window + Math.floor(rand() * 10_000),
      fallbackMarginTokens: margin,
      minOutputTokens: minimum,
      backend: new FakeBackend(
        failing ? { error: new Error("x") } : { count: prompt },
      ),
      estimate: () => prompt,
    };
    const result = await budget(request, options);
    const context = JSON.stringify({
      i,
      request,
      window,
      margin,
      minimum,
      failing,
      prompt,
    });
    deepStrictEqual(request, before, `mutated: ${context}`);
    const cap = callerCap(request);
    const required = Math.min(minimum, cap ?? minimum);
    const remaining = window - Math.max(prompt, failing ? 1 : 0) -
      (failing ? margin : 0);
    if (refusedCap(request)) {
      // The server answers such a request itself: it goes as it came.
      strictEqual(result.action, "unchanged", context);
      strictEqual(result.request, request);
    } else if (result.action === "set") {
      const written = result.request[result.field!] as number;
      strictEqual(written, result.maxTokens, context);
      ok(written >= required, `below the minimum: ${context}`);
      ok(
        cap === undefined || written <= cap,
        `above the caller's cap: ${context}`,
      );
      ok(written <= remaining, `above the window: ${context}`);
      strictEqual(written, Math.min(remaining, cap ?? Infinity), context);
    } else {
      strictEqual(result.action, "compress", context);
      ok(remaining < required, context);
      strictEqual(result.request, request);
    }
  }
});

Deno.test("budget() never grows as the prompt grows", async () => {
  const rand = random(7);
  for (let i = 0; i < 300; i++) {
    const request = randomRequest(rand);
    const options = {
      window: 50_000,
      contextLength: 65_536,
      minOutputTokens: 1 + Math.floor(rand() * 4096),
    };
    let previous = Infinity;
    for (
      let prompt = 0;
      prompt <= 52_000;
      prompt += 1 + Math.floor(rand() * 4000)
    ) {
      const result = await budget(request, {
        ...options,
        backend: new FakeBackend({ count: prompt }),
      });
      const allowed = result.action === "set" ? result.maxTokens! : 0;
      ok(
        allowed <= previous,
        `grew at prompt ${prompt}: ${JSON.stringify(request)}`,
      );
      previous = allowed;
    }
  }
});
