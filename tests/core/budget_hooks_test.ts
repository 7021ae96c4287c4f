// Covers: src/core/budget.ts, src/core/backend.ts, src/bridges/fetch.ts
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import type {
  CapReading,
  JsonObject,
  ReadCapsOptions,
  RequestKind,
} from "../../src/core/backend.ts";
import { budget } from "../../src/core/budget.ts";
import { budgetedFetch } from "../../src/bridges/fetch.ts";
import {
  FakeBackend,
  type FakeBackendOptions,
} from "../../src/testing/fake_backend.ts";

const W = 50_000;
const C = 65_536;
const CHAT = { messages: [{ role: "user", content: "hi" }] };

Deno.test("budget() keeps a margin only for the estimated part of a count", async (t) => {
  const run = (count: NonNullable<FakeBackendOptions["count"]>) =>
    budget(CHAT, {
      window: W,
      contextLength: C,
      backend: new FakeBackend({ count }),
    });
  await t.step("an exact count keeps no margin", async () => {
    const result = await run({ tokens: 10_000, estimatedTokens: 0 });
    strictEqual(result.maxTokens, 40_000);
    strictEqual(result.source, "fake");
  });
  await t.step(
    "a small estimated part keeps a margin of its own size",
    async () => {
      const result = await run({ tokens: 10_000, estimatedTokens: 300 });
      strictEqual(result.maxTokens, 39_700);
    },
  );
  await t.step("a large estimated part keeps at most F", async () => {
    const result = await run({ tokens: 10_000, estimatedTokens: 5_000 });
    strictEqual(result.maxTokens, 40_000 - 1024);
  });
  await t.step("the count's own source label wins", async () => {
    const result = await run({
      tokens: 10_000,
      estimatedTokens: 10_000,
      source: "acme-estimate",
    });
    strictEqual(result.source, "acme-estimate");
    strictEqual(result.maxTokens, 40_000 - 1024);
  });
  await t.step(
    "the margin also lowers the hard limit of a compress answer",
    async () => {
      const result = await run({ tokens: 48_000, estimatedTokens: 100 });
      strictEqual(result.action, "compress");
      strictEqual(result.hardLimitTokens, 4096); // below C - P - 100
      const full = await run({ tokens: C - 2000, estimatedTokens: 100 });
      strictEqual(full.hardLimitTokens, 2000 - 100);
    },
  );
  for (
    const invalid of [
      { tokens: 10, estimatedTokens: 11 },
      { tokens: -1, estimatedTokens: 0 },
      { tokens: 10, estimatedTokens: 0.5 },
      { tokens: 10 } as unknown as { tokens: number; estimatedTokens: number },
    ]
  ) {
    await t.step(
      `an invalid count ${JSON.stringify(invalid)} falls back`,
      async () => {
        strictEqual((await run(invalid)).source, "rough-fallback");
      },
    );
  }
});

/** A backend for requests in Gemini's shape: `contents`, cap in `generationConfig`. */
class NestedCapBackend extends FakeBackend {
  override requestKind(request: JsonObject): RequestKind | undefined {
    return Array.isArray(request.contents) ? "chat" : undefined;
  }
  override readCaps(
    request: JsonObject,
    _options: ReadCapsOptions,
  ): CapReading {
    const config = request.generationConfig as JsonObject | undefined;
    return {
      value: this.coerceOutputBudget(config?.maxOutputTokens),
      field: "generationConfig.maxOutputTokens",
    };
  }
  override writeCap(
    request: JsonObject,
    _field: string,
    value: number,
  ): JsonObject {
    const config = request.generationConfig as JsonObject | undefined;
    return {
      ...request,
      generationConfig: { ...config, maxOutputTokens: value },
    };
  }
}

const GEMINI = {
  contents: [{ role: "user", parts: [{ text: "hi" }] }],
  generationConfig: { temperature: 0.2, maxOutputTokens: 60_000 },
};

Deno.test("budget() reads and writes caps through the backend's hooks", async (t) => {
  await t.step("a shape only the backend knows is budgeted", async () => {
    const backend = new NestedCapBackend({ count: 1_000 });
    const result = await budget(GEMINI, {
      window: W,
      contextLength: C,
      backend,
    });
    strictEqual(result.action, "set");
    strictEqual(result.field, "generationConfig.maxOutputTokens");
    deepStrictEqual(result.request, {
      contents: GEMINI.contents,
      generationConfig: { temperature: 0.2, maxOutputTokens: 49_000 },
    });
    strictEqual(GEMINI.generationConfig.maxOutputTokens, 60_000);
  });
  await t.step("the caller's smaller nested cap is kept", async () => {
    const backend = new NestedCapBackend({ count: 1_000 });
    const request = { ...GEMINI, generationConfig: { maxOutputTokens: 500 } };
    const result = await budget(request, {
      window: W,
      contextLength: C,
      backend,
    });
    strictEqual(result.maxTokens, 500);
  });
  await t.step("the default backend leaves that shape unchanged", async () => {
    const result = await budget(GEMINI, {
      window: W,
      contextLength: C,
      backend: new FakeBackend({ count: 1_000 }),
    });
    strictEqual(result.action, "unchanged");
    ok(result.reason.includes("unsupported request"));
  });
  const broken: [string, Partial<NestedCapBackend>][] = [
    ["requestKind throws", {
      requestKind: () => {
        throw new Error("boom");
      },
    }],
    ["readCaps throws", {
      readCaps: () => {
        throw new Error("boom");
      },
    }],
    ["readCaps answers a blank field", {
      readCaps: () => ({ value: undefined, field: "" }),
    }],
    ["readCaps answers a fractional cap", {
      readCaps: () => ({ value: 1.5, field: "max_tokens" }),
    }],
    ["writeCap throws", {
      writeCap: () => {
        throw new Error("boom");
      },
    }],
    ["writeCap answers a non-object", {
      writeCap: () => null as unknown as JsonObject,
    }],
  ];
  for (const [name, flaw] of broken) {
    await t.step(`${name}: the request is left unchanged`, async () => {
      const backend = Object.assign(
        new NestedCapBackend({ count: 1_000 }),
        flaw,
      );
      const result = await budget(GEMINI, {
        window: W,
        contextLength: C,
        backend,
      });
      strictEqual(result.action, "unchanged");
      strictEqual(result.request, GEMINI);
      ok(result.reason.includes("backend hook failed"));
    });
  }
});

Deno.test("bridges clamp through the backend's writeCap", async () => {
  const sent: string[] = [];
  const fetch = budgetedFetch(
    (_input, init) => {
      sent.push(String(init?.body));
      return Promise.resolve(new Response("{}"));
    },
    {
      window: W,
      contextLength: C,
      backend: new NestedCapBackend({ count: 49_000 }),
    },
  );
  await fetch("http://upstream.test/v1/chat/completions", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(GEMINI),
  });
  deepStrictEqual(JSON.parse(sent[0]!).generationConfig, {
    temperature: 0.2,
    maxOutputTokens: 4096, // R: C - P would leave no room to compress
  });
});
