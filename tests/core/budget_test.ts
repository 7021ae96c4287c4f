import { deepStrictEqual, ok, rejects, strictEqual } from "node:assert/strict";
import {
  Backend,
  budget,
  type BudgetOptions,
  type JsonObject,
} from "../../mod.ts";
import { FakeBackend } from "../../src/testing/mod.ts";
import { TemplateRejectedError } from "../../src/core/errors.ts";

const W = 55705;
const C = 65536;

function options(overrides: Partial<BudgetOptions> = {}): BudgetOptions {
  return {
    window: W,
    contextLength: C,
    backend: new FakeBackend({ count: 1705 }),
    ...overrides,
  };
}

function chat(extra: JsonObject = {}): JsonObject {
  return { model: "m", messages: [{ role: "user", content: "hi" }], ...extra };
}

Deno.test("budget() sets the output budget left below the window", async (t) => {
  await t.step(
    "writes W - P as max_tokens when the caller gave no cap",
    async () => {
      const request = chat();
      const result = await budget(request, options());
      strictEqual(result.action, "set");
      strictEqual(result.maxTokens, 54000);
      strictEqual(result.promptTokens, 1705);
      strictEqual(result.field, "max_tokens");
      strictEqual(result.source, "fake");
      strictEqual(
        result.reason,
        "fake: compression_window=55705, prompt_tokens=1705, max_tokens=54000",
      );
      deepStrictEqual(result.request, { ...request, max_tokens: 54000 });
      ok(result.request !== request);
      strictEqual(request.max_tokens, undefined);
    },
  );

  await t.step(
    "clamps an oversized caller cap and keeps a smaller one",
    async () => {
      strictEqual(
        (await budget(chat({ max_tokens: 65536 }), options())).maxTokens,
        54000,
      );
      const small = await budget(chat({ max_tokens: 500 }), options());
      strictEqual(small.action, "set");
      strictEqual(small.maxTokens, 500);
    },
  );

  await t.step("respects the backend's output limit", async () => {
    const result = await budget(
      chat(),
      options({ backend: new FakeBackend({ count: 10, outputLimit: 9000 }) }),
    );
    strictEqual(result.maxTokens, 9000);
  });

  await t.step("writes defaultField when the caller gave no cap", async () => {
    const result = await budget(
      chat(),
      options({ defaultField: "max_output_tokens" }),
    );
    strictEqual(result.field, "max_output_tokens");
    strictEqual(result.request.max_output_tokens, 54000);
  });

  await t.step(
    "maps the field through the backend's outputBudgetField",
    async () => {
      class Renaming extends FakeBackend {
        override outputBudgetField(): string {
          return "n_predict";
        }
      }
      const result = await budget(
        chat({ max_tokens: 9 }),
        options({ backend: new Renaming({ count: 1 }) }),
      );
      deepStrictEqual(result.request, { ...chat(), n_predict: 9 });
    },
  );
});

Deno.test("budget() reads the caller's caps like the original plugin", async (t) => {
  await t.step("the smallest positive cap at either level wins", async () => {
    const result = await budget(
      chat({
        max_tokens: 3000,
        max_completion_tokens: 2000,
        extra_body: { max_output_tokens: 1000 },
      }),
      options(),
    );
    strictEqual(result.maxTokens, 1000);
  });

  await t.step(
    "the field of the smallest top-level cap is kept, all aliases go",
    async () => {
      const request = chat({
        max_tokens: 3000,
        max_completion_tokens: 2000,
        extra_body: { max_output_tokens: 1000, max_tokens: 5, top_k: 3 },
      });
      const result = await budget(request, options());
      strictEqual(result.field, "max_completion_tokens");
      deepStrictEqual(result.request, {
        model: "m",
        messages: request.messages,
        extra_body: { top_k: 3 },
        max_completion_tokens: 5,
      });
      deepStrictEqual(request.extra_body, {
        max_output_tokens: 1000,
        max_tokens: 5,
        top_k: 3,
      });
    },
  );

  await t.step(
    "a nested cap's field is used when no top-level cap exists; an emptied extra_body stays {}",
    async () => {
      const result = await budget(
        chat({ extra_body: { max_completion_tokens: 700 } }),
        options(),
      );
      deepStrictEqual(result.request, {
        ...chat(),
        extra_body: {},
        max_completion_tokens: 700,
      });
    },
  );

  await t.step("a null cap is no cap", async () => {
    const result = await budget(chat({ max_tokens: null }), options());
    strictEqual(result.action, "set");
    strictEqual(result.maxTokens, 54000);
  });

  await t.step(
    "a cap the server refuses leaves the request as sent, naming the field",
    async () => {
      for (const value of [true, false, 0, -5, 1.5, "2048", [], {}]) {
        const request = chat({ max_tokens: value, max_completion_tokens: 500 });
        const result = await budget(request, options());
        const shown = `cap ${JSON.stringify(value)}`;
        strictEqual(result.action, "unchanged", shown);
        strictEqual(result.request, request, shown);
        strictEqual(result.maxTokens, undefined, shown);
        ok(result.reason.includes(": 'max_tokens' is not a positive integer"));
      }
      const nested = await budget(
        chat({ max_tokens: 900, extra_body: { max_completion_tokens: -1 } }),
        options(),
      );
      strictEqual(nested.action, "unchanged");
      ok(nested.reason.includes(": 'extra_body.max_completion_tokens' is"));
    },
  );

  await t.step("a cap below R is the required minimum", async () => {
    const tight = options({ backend: new FakeBackend({ count: W - 300 }) });
    strictEqual((await budget(chat({ max_tokens: 300 }), tight)).action, "set");
    strictEqual(
      (await budget(chat({ max_tokens: 301 }), tight)).maxTokens,
      300,
    );
    strictEqual((await budget(chat({ max_tokens: 1 }), tight)).maxTokens, 1);
    strictEqual((await budget(chat(), tight)).action, "compress");
  });
});

Deno.test("budget() asks for compression instead of a tiny cap", async (t) => {
  await t.step("compresses exactly when less than R is left", async () => {
    const fits = await budget(
      chat(),
      options({ backend: new FakeBackend({ count: W - 4096 }) }),
    );
    strictEqual(fits.action, "set");
    strictEqual(fits.maxTokens, 4096);
    const request = chat({ max_tokens: 65536 });
    const over = await budget(
      request,
      options({ backend: new FakeBackend({ count: W - 4095 }) }),
    );
    strictEqual(over.action, "compress");
    strictEqual(over.request, request);
    strictEqual(over.maxTokens, 4095);
    strictEqual(over.promptTokens, W - 4095);
    ok(over.reason.includes("compress"));
  });

  await t.step(
    "tells the clamp limit: min(caller's cap, R, C - P (- F))",
    async () => {
      // C - P = 9,931 is more than R: a reply of R still leaves the room
      // the compression request needs next.
      const exact = await budget(
        chat({ max_completion_tokens: 65536 }),
        options({ backend: new FakeBackend({ count: W - 100 }) }),
      );
      strictEqual(exact.field, "max_completion_tokens");
      strictEqual(exact.requiredTokens, 4096);
      strictEqual(exact.hardLimitTokens, 4096);
      strictEqual(exact.window, W);
      const capped = await budget(
        chat({ max_tokens: 3000 }),
        options({ backend: new FakeBackend({ count: W - 100 }) }),
      );
      strictEqual(capped.hardLimitTokens, 3000);
      const full = await budget(
        chat({ max_tokens: 65536 }),
        options({ backend: new FakeBackend({ count: C - 1000 }) }),
      );
      strictEqual(full.hardLimitTokens, 1000);
      const estimated = await budget(
        chat(),
        options({
          backend: new FakeBackend({ error: new Error() }),
          estimate: () => C - 3000,
        }),
      );
      strictEqual(estimated.hardLimitTokens, 3000 - 1024);
    },
  );

  await t.step("never sends zero or a negative cap", async () => {
    for (const count of [W, W + 1, C + 10_000]) {
      const result = await budget(
        chat(),
        options({ backend: new FakeBackend({ count }) }),
      );
      strictEqual(result.action, "compress");
      strictEqual(result.request.max_tokens, undefined);
    }
  });
});

Deno.test("budget() falls back to the rough estimate minus the margin", async (t) => {
  await t.step("when the backend throws", async () => {
    const result = await budget(
      chat(),
      options({
        backend: new FakeBackend({ error: new Error("down") }),
        estimate: () => 1000,
      }),
    );
    strictEqual(result.action, "set");
    strictEqual(result.source, "rough-fallback");
    strictEqual(result.maxTokens, W - 1000 - 1024);
    strictEqual(
      result.reason,
      `rough-fallback: compression_window=${W}, prompt_tokens=1000, max_tokens=${
        W - 2024
      }`,
    );
  });

  await t.step("when the backend returns an invalid count", async () => {
    for (const count of [-1, 1.5, Number.NaN]) {
      const result = await budget(
        chat(),
        options({ backend: new FakeBackend({ count }), estimate: () => 10 }),
      );
      strictEqual(result.source, "rough-fallback");
    }
  });

  await t.step("when the count is aborted", async () => {
    const controller = new AbortController();
    controller.abort();
    const result = await budget(
      chat(),
      options({ signal: controller.signal, estimate: () => 10 }),
    );
    strictEqual(result.source, "rough-fallback");
  });

  await t.step("floors the estimate at 1 and rounds it up", async () => {
    const failing = new FakeBackend({ error: new TypeError("x") });
    strictEqual(
      (await budget(chat(), options({ backend: failing, estimate: () => 0 })))
        .promptTokens,
      1,
    );
    strictEqual(
      (await budget(chat(), options({ backend: failing, estimate: () => 2.2 })))
        .promptTokens,
      3,
    );
  });

  await t.step("uses the built-in estimator by default", async () => {
    const request = chat({
      messages: [{ role: "user", content: "x".repeat(400) }],
    });
    const result = await budget(
      request,
      options({ backend: new FakeBackend({ error: new Error() }) }),
    );
    strictEqual(result.promptTokens, 100);
  });

  await t.step(
    "leaves the request unchanged when the estimate fails too",
    async () => {
      const request = chat();
      for (
        const estimate of [() => {
          throw new Error("no");
        }, () => Number.NaN]
      ) {
        const result = await budget(
          request,
          options({
            backend: new FakeBackend({ error: new Error() }),
            estimate,
          }),
        );
        strictEqual(result.action, "unchanged");
        strictEqual(result.source, "none");
        strictEqual(result.request, request);
      }
    },
  );
});

Deno.test("budget() leaves unsupported and foreign requests alone without counting", async (t) => {
  const shapes: unknown[] = [
    null,
    "text",
    [],
    { model: "m" },
    { messages: "hi" },
    { messages: [], extra_body: { messages: "hi" } },
    { messages: [], extra_body: "x" },
  ];
  await t.step("unsupported shapes", async () => {
    for (const shape of shapes) {
      const backend = new FakeBackend({ count: 1 });
      const result = await budget(shape as JsonObject, options({ backend }));
      strictEqual(result.action, "unchanged");
      strictEqual(result.request, shape);
      strictEqual(backend.calls.length, 0);
    }
  });

  await t.step("extra_body.messages makes a request supported", async () => {
    const result = await budget({ extra_body: { messages: [] } }, options());
    strictEqual(result.action, "set");
  });

  await t.step("another model, provider or base URL", async () => {
    const route = {
      model: "m",
      provider: "Custom",
      baseUrl: "HTTP://Box:80/v1/",
    };
    const cases: [JsonObject, BudgetOptions["target"], string][] = [
      [chat({ model: "other" }), undefined, "unchanged"],
      [chat({ extra_body: { model: "other" } }), undefined, "unchanged"],
      [chat({ model: "other", extra_body: { model: "m" } }), undefined, "set"],
      [chat(), { provider: " custom " }, "set"],
      [chat(), { provider: "openai" }, "unchanged"],
      [chat(), { baseUrl: "http://box/v1" }, "set"],
      [chat(), { baseUrl: "http://box:8000/v1" }, "unchanged"],
      [chat(), { baseUrl: "http://box/v2" }, "unchanged"],
      [chat(), {}, "set"],
    ];
    for (const [request, target, action] of cases) {
      const backend = new FakeBackend({ count: 1 });
      const result = await budget(
        request,
        options({ backend, route, ...(target ? { target } : {}) }),
      );
      strictEqual(result.action, action, JSON.stringify([request, target]));
      strictEqual(backend.calls.length, action === "set" ? 1 : 0);
    }
  });
});

Deno.test("budget() fails open when a backend hook throws", async (t) => {
  class Broken extends FakeBackend {
    constructor(readonly broken: string) {
      super({ count: 1 });
    }
    override coerceOutputBudget(value: unknown): number | undefined {
      if (this.broken === "coerce") throw new Error("coerce");
      return super.coerceOutputBudget(value);
    }
    override outputBudgetField(field: string): string {
      if (this.broken === "field") throw new Error("field");
      return field;
    }
    override outputBudgetLimit(): number | undefined {
      if (this.broken === "limit") throw new Error("limit");
      return this.broken === "bad-limit" ? 1.5 : undefined;
    }
  }
  // Hooks that run before the count name no source: nothing was counted.
  const counted = { coerce: "none", field: "none", limit: "fake" };
  for (
    const [broken, source] of Object.entries({
      ...counted,
      "bad-limit": "fake",
    })
  ) {
    await t.step(broken, async () => {
      const request = chat({ max_tokens: 10 });
      const result = await budget(
        request,
        options({ backend: new Broken(broken) }),
      );
      strictEqual(result.action, "unchanged");
      strictEqual(result.request, request);
      strictEqual(result.source, source);
      ok(result.reason.startsWith(`${source}: backend hook failed`));
    });
  }
  await t.step("a throwing source is replaced by unknown-backend", async () => {
    class NoSource extends Backend {
      get source(): string {
        throw new Error("secret");
      }
      count(): Promise<number> {
        return Promise.resolve(5);
      }
    }
    const result = await budget(chat(), options({ backend: new NoSource() }));
    strictEqual(result.action, "set");
    strictEqual(result.source, "unknown-backend");
  });
});

Deno.test("budget() rejects invalid options with a RangeError naming the option", async () => {
  const cases: [Partial<BudgetOptions>, string][] = [
    [{ window: 0 }, "'window' must be a positive integer: current value is 0"],
    [
      { window: 1.5 },
      "'window' must be a positive integer: current value is 1.5",
    ],
    [
      { contextLength: -1 },
      "'contextLength' must be a positive integer: current value is -1",
    ],
    [
      { window: 70000 },
      "'window' must not exceed 'contextLength': current value is 70000",
    ],
    [
      { fallbackMarginTokens: -1 },
      "'fallbackMarginTokens' must be a non-negative integer: current value is -1",
    ],
    [
      { minOutputTokens: 0 },
      "'minOutputTokens' must be a positive integer: current value is 0",
    ],
    [
      { window: 1000, fallbackMarginTokens: 1000, minOutputTokens: 1 },
      "'fallbackMarginTokens' must be below 'window': current value is 1000",
    ],
    [
      { window: 1000, minOutputTokens: 1000, fallbackMarginTokens: 0 },
      "'minOutputTokens' must be below 'window': current value is 1000",
    ],
    [
      { window: 1000, fallbackMarginTokens: 500, minOutputTokens: 500 },
      "'fallbackMarginTokens' + 'minOutputTokens' must be below 'window': current value is 1000",
    ],
  ];
  for (const [overrides, message] of cases) {
    await rejects(budget(chat(), options(overrides)), (error: unknown) => {
      ok(error instanceof RangeError);
      strictEqual(error.message, `Cannot compute the budget as ${message}`);
      return true;
    });
  }
});

Deno.test("budget() uses a usage anchor between the exact count and the estimate", async (t) => {
  const failing = new FakeBackend({ error: new Error("down") });
  await t.step("an anchor count is used without the margin", async () => {
    const result = await budget(
      chat(),
      options({ backend: failing, anchor: () => 2000, estimate: () => 1 }),
    );
    strictEqual(result.source, "usage-anchor");
    strictEqual(result.maxTokens, W - 2000);
  });
  await t.step(
    "no anchor, an invalid one or a throwing one falls to the estimate",
    async () => {
      for (
        const anchor of [() => undefined, () => -1, () => 1.5, () => {
          throw new Error("x");
        }]
      ) {
        const result = await budget(
          chat(),
          options({ backend: failing, anchor, estimate: () => 10 }),
        );
        strictEqual(result.source, "rough-fallback");
      }
    },
  );
  await t.step("an exact count wins over the anchor", async () => {
    const result = await budget(chat(), options({ anchor: () => 2000 }));
    strictEqual(result.source, "fake");
    strictEqual(result.promptTokens, 1705);
  });
});

Deno.test("budget() leaves a request the chat template rejects unchanged", async () => {
  const request = chat({ max_tokens: 100 });
  let estimated = false;
  const result = await budget(
    request,
    options({
      backend: new FakeBackend({ error: new TemplateRejectedError() }),
      estimate: () => {
        estimated = true;
        return 1000;
      },
    }),
  );
  strictEqual(result.action, "unchanged");
  strictEqual(result.request, request);
  strictEqual(estimated, false);
  ok(result.reason.includes("rejects this request"));
});

Deno.test("budget() names no source when it counted nothing", async () => {
  const backend = new FakeBackend({ count: 1705 });
  const outside = await budget(
    chat({ model: "other" }),
    options({ backend, route: { model: "m" } }),
  );
  strictEqual(outside.action, "unchanged");
  strictEqual(outside.source, "none");
  strictEqual(outside.reason, "none: outside the budgeted route (model)");
  const unsupported = await budget({ model: "m" }, options({ backend }));
  strictEqual(unsupported.source, "none");
  ok(unsupported.reason.startsWith("none: unsupported request"));
  const invalidCap = await budget(
    chat({ max_tokens: 0 }),
    options({ backend }),
  );
  strictEqual(invalidCap.source, "none");
  strictEqual(backend.calls.length, 0);
});

Deno.test("budget()'s compress reasons never print a negative budget", async () => {
  const near = await budget(
    chat(),
    options({ backend: new FakeBackend({ count: W - 4095 }) }),
  );
  strictEqual(near.action, "compress");
  strictEqual(
    near.reason,
    `fake: compression_window=${W}, prompt_tokens=${
      W - 4095
    }, max_tokens=4095 is below the required 4096: compress first`,
  );
  const past = await budget(
    chat(),
    options({ backend: new FakeBackend({ count: W + 3903 }) }),
  );
  strictEqual(past.action, "compress");
  strictEqual(
    past.reason,
    `fake: compression_window=${W}, prompt_tokens=${
      W + 3903
    }: no room is left for output (at least 4096 required): compress first`,
  );
  ok(!/-\d/.test(past.reason), past.reason);
});
