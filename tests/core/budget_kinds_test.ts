// Covers: src/core/budget.ts, src/core/kind.ts
import { deepStrictEqual, strictEqual } from "node:assert/strict";
import {
  budget,
  type CountOptions,
  type CountResult,
  type JsonObject,
} from "../../mod.ts";
import { FakeBackend } from "../../src/testing/mod.ts";

class KindRecorder extends FakeBackend {
  readonly kinds: (string | undefined)[] = [];
  override count(
    request: JsonObject,
    options: CountOptions,
  ): Promise<number | CountResult> {
    this.kinds.push(options.kind);
    return super.count(request, options);
  }
}

const options = { window: 10_000, contextLength: 16_384 };

Deno.test("budget() budgets completions and Responses requests", async (t) => {
  await t.step(
    "a prompt string is a completion, written as max_tokens",
    async () => {
      const backend = new KindRecorder({ count: 1000 });
      const result = await budget({ model: "m", prompt: "Once upon a time" }, {
        ...options,
        backend,
      });
      deepStrictEqual(backend.kinds, ["completion"]);
      strictEqual(result.action, "set");
      strictEqual(result.request.max_tokens, 9000);
    },
  );

  await t.step(
    "instructions + input is a Responses request, written as max_output_tokens",
    async () => {
      const backend = new KindRecorder({ count: 1000 });
      const request = {
        model: "m",
        instructions: "Be brief.",
        input: [{ role: "user", content: "Hi" }],
      };
      const result = await budget(request, { ...options, backend });
      deepStrictEqual(backend.kinds, ["responses"]);
      strictEqual(result.field, "max_output_tokens");
      deepStrictEqual(result.request, { ...request, max_output_tokens: 9000 });
    },
  );

  await t.step("a Responses caller cap is kept in its field", async () => {
    const result = await budget(
      { input: "Hi", max_output_tokens: 300 },
      { ...options, backend: new FakeBackend({ count: 10 }) },
    );
    deepStrictEqual(result.request, { input: "Hi", max_output_tokens: 300 });
  });

  await t.step("an explicit kind must match the shape", async () => {
    const backend = new KindRecorder({ count: 1 });
    for (
      const [request, kind] of [
        [{ messages: [] }, "completion"],
        [{ prompt: "x" }, "responses"],
        [{ input: "x" }, "chat"],
        [{ prompt: ["a", "b"] }, "completion"],
      ] as const
    ) {
      const result = await budget(request, { ...options, backend, kind });
      strictEqual(result.action, "unchanged", JSON.stringify([request, kind]));
    }
    deepStrictEqual(backend.kinds, []);
  });

  await t.step(
    "the fallback estimates completions and Responses requests too",
    async () => {
      const failing = new FakeBackend({ error: new Error("down") });
      const completion = await budget({ prompt: "x".repeat(400) }, {
        ...options,
        backend: failing,
      });
      strictEqual(completion.promptTokens, 100);
      const responses = await budget(
        {
          instructions: "y".repeat(40),
          input: [{ role: "user", content: "z".repeat(360) }],
        },
        { ...options, backend: failing },
      );
      strictEqual(responses.promptTokens, 100);
      strictEqual(responses.source, "rough-fallback");
    },
  );
});
