import { deepStrictEqual, rejects, strictEqual } from "node:assert/strict";
import { preflight } from "../../src/bridges/preflight.ts";
import { FakeBackend } from "../../src/testing/mod.ts";

const input = {
  system: "Be brief.",
  messages: [{ role: "user", content: "x".repeat(400) }],
  tools: [{ type: "function", function: { name: "f", parameters: {} } }],
};

Deno.test("preflight() returns the exact compression pressure P + R - 1", async () => {
  const backend = new FakeBackend({ count: 51610 });
  const result = await preflight(input, {
    backend,
    contextLength: 65536,
    model: "qwen",
  });
  deepStrictEqual(result, {
    pressure: 51610 + 4096 - 1,
    promptTokens: 51610,
    source: "fake",
  });
  deepStrictEqual(backend.calls[0], {
    model: "qwen",
    messages: [{ role: "system", content: "Be brief." }, ...input.messages],
    tools: input.tools,
  });
  const window = 55705;
  strictEqual(result.pressure! >= window, true);
  const fits = await preflight(input, {
    backend: new FakeBackend({ count: 51609 }),
    contextLength: 65536,
  });
  strictEqual(fits.pressure! >= window, false);
});

Deno.test("preflight() adds the margin to a rough estimate", async () => {
  const failing = new FakeBackend({ error: new Error("down") });
  const result = await preflight(input, {
    backend: failing,
    contextLength: 65536,
    estimate: () => 1000,
    minOutputTokens: 100,
    fallbackMarginTokens: 50,
  });
  deepStrictEqual(result, {
    pressure: 1000 + 50 + 100 - 1,
    promptTokens: 1000,
    source: "rough-fallback",
  });
});

Deno.test("preflight() reports no pressure when every count fails", async () => {
  const result = await preflight(input, {
    backend: new FakeBackend({ error: new Error("down") }),
    contextLength: 65536,
    estimate: () => {
      throw new Error("also down");
    },
  });
  deepStrictEqual(result, {
    pressure: undefined,
    promptTokens: undefined,
    source: "none",
  });
});

Deno.test("preflight() rejects invalid options", async () => {
  const backend = new FakeBackend();
  await rejects(preflight(input, { backend, contextLength: 0 }), RangeError);
  await rejects(
    preflight(input, { backend, contextLength: 10, minOutputTokens: 0 }),
    RangeError,
  );
  await rejects(
    preflight(input, { backend, contextLength: 10, fallbackMarginTokens: -1 }),
    RangeError,
  );
});
