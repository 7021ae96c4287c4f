// Covers: src/bridges/hermes/mod.ts, src/bridges/hermes/settings.ts, src/bridges/hermes/threshold.ts
import {
  deepStrictEqual,
  ok,
  rejects,
  strictEqual,
  throws,
} from "node:assert/strict";
import { loadConfig } from "../../../src/config/mod.ts";
import {
  ConfigError,
  type ConfigIssue,
} from "../../../src/core/config_error.ts";
import {
  type HermesSettings,
  hermesWindow,
  type HermesWindowOptions,
  loadHermesSettings,
  parseHermesSettings,
  resolveWindow,
} from "../../../src/bridges/hermes/mod.ts";
import { captureLogs } from "../../_kit/log_capture.ts";

const CANARY = "sk-CANARY-hermes-5e1d";
const FIXTURES = new URL("../../fixtures/hermes/", import.meta.url);
const URL_ENV = { INCONTEXT_TOKENIZER_URL: "http://127.0.0.1:8000/tokenize" };
const SEPTEMBER = { release: "2026-09" } as const;
const RELEASE_ENV = { ...URL_ENV, INCONTEXT_HERMES_RELEASE: "2026-09" };

function fixture(name: string): URL {
  return new URL(name, FIXTURES);
}

/** Settings with Hermes' defaults and the given overrides. */
function settings(
  model: HermesSettings["model"] = {},
  compression: Partial<HermesSettings["compression"]> = {},
): HermesSettings {
  return {
    model,
    compression: { enabled: true, threshold: 0.5, ...compression },
  };
}

/** W by the 2026-09 arithmetic, unless `options.release` names another. */
function window(
  model: HermesSettings["model"],
  compression: Partial<HermesSettings["compression"]> = {},
  options: Partial<HermesWindowOptions> = {},
): number {
  return hermesWindow(settings(model, compression), {
    release: "2026-09",
    ...options,
  });
}

/** W by the 2026-07 arithmetic (Hermes 0.18.x). */
function window07(
  model: HermesSettings["model"],
  compression: Partial<HermesSettings["compression"]> = {},
  options: Partial<HermesWindowOptions> = {},
): number {
  return window(model, compression, { ...options, release: "2026-07" });
}

function issue(variable: string, rule: string): ConfigIssue {
  return { variable, rule };
}

function hermesIssue(path: string, rule: string): ConfigIssue {
  return issue(`INCONTEXT_HERMES_CONFIG (${path})`, rule);
}

/** Asserts that `error` is a ConfigError that leaks no canary, and returns its issues. */
function issuesOf(error: unknown): ConfigIssue[] {
  ok(error instanceof ConfigError, `expected a ConfigError, got ${error}`);
  for (
    const text of [
      error.message,
      error.stack ?? "",
      JSON.stringify(error.issues),
    ]
  ) {
    ok(!text.includes(CANARY), `a value leaked into: ${text}`);
  }
  strictEqual(error.cause, undefined);
  for (const { variable, rule } of error.issues) {
    ok(error.message.includes(`${variable} ${rule}`), variable);
  }
  return [...error.issues];
}

function thrownIssues(fn: () => unknown): ConfigIssue[] {
  try {
    fn();
  } catch (error) {
    return issuesOf(error);
  }
  throw new Error("expected a ConfigError");
}

async function rejectedIssues(
  promise: Promise<unknown>,
): Promise<ConfigIssue[]> {
  try {
    await promise;
  } catch (error) {
    return issuesOf(error);
  }
  throw new Error("expected a ConfigError");
}

Deno.test("hermesWindow() reproduces Hermes 2026-07's worked examples", async (t) => {
  const table: [number, number][] = [
    [65_536, 64_000],
    [131_072, 98_304],
    [262_144, 196_608],
    [1_000_000, 500_000],
  ];
  for (const [context, expected] of table) {
    await t.step(`${context} -> ${expected}`, () => {
      strictEqual(window07({ contextLength: context }), expected);
      strictEqual(window07({}, {}, { contextLength: context }), expected);
    });
  }
  await t.step("131,072 with model.max_tokens 65,536 -> 64,000", () => {
    strictEqual(
      window07({ contextLength: 131_072, maxTokens: 65_536 }),
      64_000,
    );
  });
  await t.step("falls back to 85% only when the floor reaches eff", () => {
    // eff = 64,000: the floor equals it, so min(85%, eff - 1).
    strictEqual(window07({ contextLength: 64_000 }), 54_400);
    // eff = 57,344 < 64,000: 85% of eff, as 2026-09 does too.
    strictEqual(window07({ contextLength: 65_536, maxTokens: 8192 }), 48_742);
    strictEqual(window({ contextLength: 65_536, maxTokens: 8192 }), 48_742);
    // The releases disagree from about 64,000 to 75,300 tokens only.
    strictEqual(window07({ contextLength: 75_294 }), 64_000);
    strictEqual(window({ contextLength: 75_294 }), 63_999);
    strictEqual(window07({ contextLength: 75_295 }), 64_000);
    strictEqual(window({ contextLength: 75_295 }), 64_000);
  });
  await t.step("reads neither threshold_tokens nor model_thresholds", () => {
    strictEqual(
      window07({ contextLength: 131_072 }, { thresholdTokens: 80_000 }),
      98_304,
    );
    strictEqual(
      window07({ default: "qwen3", contextLength: 1_000_000 }, {
        modelThresholds: { qwen3: 0.9 },
      }),
      500_000,
    );
  });
  await t.step("disabled compression -> the context length", () => {
    strictEqual(
      window07({ contextLength: 65_536 }, { enabled: false }),
      65_536,
    );
  });
  await t.step("an unknown release is a RangeError", () => {
    throws(
      () =>
        hermesWindow(settings({ contextLength: 65_536 }), {
          release: "2026-08" as "2026-07",
        }),
      {
        name: "RangeError",
        message:
          "Cannot compute the Hermes window as 'release' must be one of 2026-07, 0.19, 2026-09: current value is 2026-08",
      },
    );
  });
});

Deno.test("hermesWindow() reproduces Hermes 0.19.0's worked examples", async (t) => {
  const w19 = (
    model: HermesSettings["model"],
    compression: Partial<HermesSettings["compression"]> = {},
  ) => window(model, compression, { release: "0.19" });
  const table: [number, number][] = [
    [65_536, 64_000],
    [131_072, 98_304],
    [262_144, 196_608],
    [1_000_000, 500_000],
  ];
  for (const [context, expected] of table) {
    await t.step(`${context} -> ${expected}, as 2026-07`, () => {
      strictEqual(w19({ contextLength: context }), expected);
      strictEqual(window07({ contextLength: context }), expected);
    });
  }
  await t.step("1,000,000 at threshold 0.75 -> 750,000", () => {
    strictEqual(
      w19({ contextLength: 1_000_000 }, { threshold: 0.75 }),
      750_000,
    );
  });
  await t.step("131,072 with model.max_tokens 65,536 -> 64,000", () => {
    strictEqual(w19({ contextLength: 131_072, maxTokens: 65_536 }), 64_000);
  });
  const model = { default: "test-model", contextLength: 1_000_000 };
  await t.step("model_thresholds: an exact key or a substring", () => {
    strictEqual(
      w19(model, { modelThresholds: { "test-model": 0.3 } }),
      300_000,
    );
    strictEqual(w19(model, { modelThresholds: { test: 0.3 } }), 300_000);
    strictEqual(
      w19(model, { modelThresholds: { test: 0.3, "test-mo": 0.6 } }),
      600_000,
    );
    // Below 512,000 tokens Hermes raises the override to 0.75 too.
    strictEqual(
      w19({ ...model, contextLength: 131_072 }, {
        modelThresholds: { test: 0.3 },
      }),
      98_304,
    );
  });
  await t.step("threshold_tokens caps W, after max_tokens", () => {
    strictEqual(w19(model, { thresholdTokens: 200_000 }), 200_000);
    strictEqual(
      w19({ contextLength: 262_144, maxTokens: 65_536 }, {
        thresholdTokens: 100_000,
      }),
      100_000,
    );
    // A cap above the window changes nothing.
    strictEqual(w19(model, { thresholdTokens: 2_000_000 }), 500_000);
  });
  await t.step("2026-07 reads neither key: Hermes 0.18.2's numbers", () => {
    strictEqual(window07(model, { modelThresholds: { test: 0.3 } }), 500_000);
    strictEqual(window07(model, { thresholdTokens: 200_000 }), 500_000);
    strictEqual(
      window07({ contextLength: 262_144, maxTokens: 65_536 }, {
        thresholdTokens: 100_000,
      }),
      147_456,
    );
  });
});

Deno.test("hermesWindow() reproduces Hermes 2026-09's worked examples", async (t) => {
  const table: [number, number][] = [
    [65_536, 55_705],
    [131_072, 98_304],
    [262_144, 196_608],
    [1_000_000, 500_000],
  ];
  for (const [context, expected] of table) {
    await t.step(`${context} -> ${expected}`, () => {
      strictEqual(window({ contextLength: context }), expected);
      strictEqual(window({}, {}, { contextLength: context }), expected);
    });
  }
  await t.step("131,072 with model.max_tokens 65,536 -> 55,705", () => {
    strictEqual(window({ contextLength: 131_072, maxTokens: 65_536 }), 55_705);
  });
  await t.step("disabled compression -> the context length", () => {
    for (const [context] of table) {
      strictEqual(
        window({ contextLength: context }, { enabled: false }),
        context,
      );
    }
    // The cap and the output reservation only matter when Hermes compresses.
    strictEqual(
      window({ contextLength: 65_536, maxTokens: 8192 }, {
        enabled: false,
        thresholdTokens: 1000,
      }),
      65_536,
    );
  });
});

Deno.test("hermesWindow() follows each step of Hermes' arithmetic", async (t) => {
  await t.step("raises the threshold to 0.75 below 512,000 tokens only", () => {
    strictEqual(
      window({ contextLength: 262_144 }, { threshold: 0.6 }),
      196_608,
    );
    strictEqual(
      window({ contextLength: 262_144 }, { threshold: 0.9 }),
      235_929,
    );
    strictEqual(window({ contextLength: 511_999 }), 383_999);
    strictEqual(window({ contextLength: 512_000 }), 256_000);
  });
  await t.step("floors the window at 64,000 tokens", () => {
    // 0.75 * 80,000 = 60,000 < 64,000 <= 0.85 * 80,000.
    strictEqual(window({ contextLength: 80_000 }), 64_000);
  });
  await t.step("triggers at 85% when the floor leaves too little room", () => {
    strictEqual(window({ contextLength: 65_536 }), 55_705);
    // A threshold above 0.85 still wins over the 85% fallback.
    strictEqual(window({ contextLength: 65_536 }, { threshold: 0.9 }), 58_982);
  });
  await t.step("subtracts model.max_tokens from the context first", () => {
    // eff = 98,304; 0.75 * eff = 73,728.
    strictEqual(window({ contextLength: 131_072, maxTokens: 32_768 }), 73_728);
    // eff = 57,344: the floor binds, so 85% of eff.
    strictEqual(window({ contextLength: 65_536, maxTokens: 8192 }), 48_742);
  });
  await t.step("uses the whole context when max_tokens leaves nothing", () => {
    strictEqual(window({ contextLength: 65_536, maxTokens: 65_536 }), 55_705);
    strictEqual(window({ contextLength: 65_536, maxTokens: 70_000 }), 55_705);
  });
  await t.step("takes options.maxTokens over model.max_tokens", () => {
    strictEqual(
      window({ contextLength: 131_072, maxTokens: 8192 }, {}, {
        maxTokens: 32_768,
      }),
      73_728,
    );
  });
  await t.step("caps the window at compression.threshold_tokens", () => {
    strictEqual(
      window({ contextLength: 131_072 }, { thresholdTokens: 80_000 }),
      80_000,
    );
    strictEqual(
      window({ contextLength: 131_072 }, { thresholdTokens: 200_000 }),
      98_304,
    );
    strictEqual(
      window({ contextLength: 1_000_000 }, { thresholdTokens: 100_000 }),
      100_000,
    );
  });
  await t.step("stays between 1 and the context length", () => {
    strictEqual(window({ contextLength: 1 }), 1);
    strictEqual(window({ contextLength: 10 }), 8);
    for (const threshold of [0.01, 0.5, 0.75, 0.85, 0.99, 1]) {
      for (let context = 1; context <= 2_000_000; context = context * 3 + 7) {
        const w = window({ contextLength: context, maxTokens: 4096 }, {
          threshold,
        });
        ok(Number.isSafeInteger(w) && w >= 1 && w <= context, `${context}`);
      }
    }
    strictEqual(
      window({ contextLength: 1_000_000 }, { threshold: 1 }),
      1_000_000,
    );
  });
});

Deno.test("hermesWindow() applies compression.model_thresholds", async (t) => {
  const modelThresholds = {
    "qwen": 0.9,
    "qwen3-coder": 0.6,
    "qwen3-coder-480b": 0.7,
  };
  const at = (model: string, context = 1_000_000) =>
    window({ default: model, contextLength: context }, { modelThresholds });
  await t.step("the longest key contained in the model name wins", () => {
    strictEqual(at("qwen3-coder-480b-a35b"), 700_000);
    strictEqual(at("qwen3-coder-30b"), 600_000);
    strictEqual(at("qwen3-8b"), 900_000);
    // The order of the keys does not matter.
    const reversed = Object.fromEntries(
      Object.entries(modelThresholds).reverse(),
    );
    strictEqual(
      window({ default: "qwen3-coder-480b-a35b", contextLength: 1_000_000 }, {
        modelThresholds: reversed,
      }),
      700_000,
    );
  });
  await t.step("no match, a case mismatch or no model keeps threshold", () => {
    strictEqual(at("llama-3.3-70b"), 500_000);
    strictEqual(at("Qwen3-8B"), 500_000);
    strictEqual(
      window({ contextLength: 1_000_000 }, { modelThresholds }),
      500_000,
    );
  });
  await t.step("an empty key never matches", () => {
    strictEqual(
      window({ default: "m", contextLength: 1_000_000 }, {
        modelThresholds: { "": 0.9 },
      }),
      500_000,
    );
  });
  await t.step("options.model is matched instead of model.default", () => {
    strictEqual(
      window({ default: "llama", contextLength: 1_000_000 }, {
        modelThresholds,
      }, { model: "qwen3-8b" }),
      900_000,
    );
  });
  await t.step("the override replaces threshold before the 0.75 raise", () => {
    // 0.6 from model_thresholds, raised to 0.75 at 262,144 tokens, as Hermes does.
    strictEqual(at("qwen3-coder-30b", 262_144), 196_608);
    strictEqual(at("qwen3-8b", 262_144), 235_929);
  });
});

Deno.test("hermesWindow() rejects what it cannot compute", async (t) => {
  await t.step("a missing context length names both sources", () => {
    const issues = thrownIssues(() => window({ default: "qwen" }));
    deepStrictEqual(issues, [
      hermesIssue(
        "model.context_length",
        "is unset and so is INCONTEXT_CONTEXT_LENGTH: set either to the served context length",
      ),
    ]);
  });
  await t.step("thresholds outside (0, 1]", () => {
    const rule = "must be a number greater than 0 and at most 1";
    for (const threshold of [0, -0.5, 1.01, Number.NaN, Infinity]) {
      deepStrictEqual(
        thrownIssues(() => window({ contextLength: 65_536 }, { threshold })),
        [hermesIssue("compression.threshold", rule)],
        String(threshold),
      );
      deepStrictEqual(
        thrownIssues(() =>
          window({ contextLength: 65_536 }, {
            modelThresholds: { qwen: threshold },
          })
        ),
        [hermesIssue("compression.model_thresholds", `each value ${rule}`)],
        String(threshold),
      );
    }
  });
  await t.step("hand-built token counts that are not positive integers", () => {
    deepStrictEqual(
      thrownIssues(() =>
        window({ contextLength: 0, maxTokens: 1.5 }, { thresholdTokens: -1 })
      ),
      [
        hermesIssue("model.context_length", "must be a positive integer"),
        hermesIssue("model.max_tokens", "must be a positive integer"),
        hermesIssue(
          "compression.threshold_tokens",
          "must be a positive integer",
        ),
      ],
    );
  });
  await t.step("options that are not positive integers", () => {
    throws(() => window({}, {}, { contextLength: 0 }), RangeError);
    throws(() => window({ contextLength: 65_536 }, {}, { maxTokens: -1 }), {
      name: "RangeError",
      message:
        "Cannot compute the Hermes window as 'maxTokens' must be a positive integer: current value is -1",
    });
  });
});

Deno.test("parseHermesSettings() reads the model and compression keys", async (t) => {
  await t.step("reads every key and ignores the others", () => {
    const parsed = parseHermesSettings(`
model:
  default: " Qwen/Qwen3-Coder-30B-A3B-Instruct "
  provider: custom
  base_url: http://127.0.0.1:8787/v1
  context_length: 65536
  max_tokens: 8192
  api_key: ${CANARY}
compression:
  enabled: false
  threshold: 0.65
  threshold_tokens: 50000
  model_thresholds: { qwen: 0.8, "glm-5.2": 1 }
  protect_last_n: 20
terminal: { backend: local }
toolsets: [hermes-cli, web]
`);
    deepStrictEqual(parsed, {
      model: {
        default: "Qwen/Qwen3-Coder-30B-A3B-Instruct",
        provider: "custom",
        baseUrl: "http://127.0.0.1:8787/v1",
        contextLength: 65536,
        maxTokens: 8192,
      },
      compression: {
        enabled: false,
        threshold: 0.65,
        thresholdTokens: 50000,
        modelThresholds: { qwen: 0.8, "glm-5.2": 1 },
      },
    });
    ok(!JSON.stringify(parsed).includes(CANARY));
    ok(Object.isFrozen(parsed));
    ok(Object.isFrozen(parsed.model));
    ok(Object.isFrozen(parsed.compression));
    ok(Object.isFrozen(parsed.compression.modelThresholds));
  });
  await t.step("an empty document, comments or null mean all defaults", () => {
    const defaults = {
      model: {},
      compression: { enabled: true, threshold: 0.5 },
    };
    for (
      const text of [
        "",
        "# nothing yet\n",
        "---\n",
        "~\n",
        "model:\ncompression:\n",
      ]
    ) {
      deepStrictEqual(
        parseHermesSettings(text),
        defaults,
        JSON.stringify(text),
      );
    }
  });
  await t.step("null and blank values count as unset", () => {
    deepStrictEqual(
      parseHermesSettings(
        "model:\n  default: ''\n  context_length: ~\ncompression:\n  threshold:\n  model_thresholds: null\n",
      ),
      { model: {}, compression: { enabled: true, threshold: 0.5 } },
    );
  });
  await t.step("accepts the older `model: NAME` form", () => {
    deepStrictEqual(
      parseHermesSettings("model: anthropic/claude-sonnet-4\n").model,
      {
        default: "anthropic/claude-sonnet-4",
      },
    );
  });
  await t.step("builds only JSON-compatible values", () => {
    // A timestamp stays a string; YAML 1.1 booleans are strings, so an error.
    strictEqual(
      parseHermesSettings("model:\n  default: 2026-09-01\n").model.default,
      "2026-09-01",
    );
    deepStrictEqual(
      thrownIssues(() => parseHermesSettings("compression:\n  enabled: no\n")),
      [hermesIssue("compression.enabled", "must be true or false")],
    );
    deepStrictEqual(
      thrownIssues(() => parseHermesSettings(`model: !!binary aGk=\n`)),
      [issue(
        "INCONTEXT_HERMES_CONFIG",
        "must be valid YAML (YAMLException at line 1, column 8)",
      )],
    );
  });
  await t.step("keeps a __proto__ key as a plain threshold entry", () => {
    const parsed = parseHermesSettings(
      "compression:\n  model_thresholds:\n    __proto__: 0.9\n",
    );
    strictEqual(
      Object.getPrototypeOf(parsed.compression.modelThresholds),
      Object.prototype,
    );
    strictEqual(parsed.compression.modelThresholds?.["__proto__"], 0.9);
    strictEqual(
      hermesWindow(parsed, {
        ...SEPTEMBER,
        model: "x__proto__y",
        contextLength: 1_000_000,
      }),
      900_000,
    );
  });
});

Deno.test("parseHermesSettings() reports every problem without echoing values", async (t) => {
  await t.step("invalid YAML names the error type and position only", () => {
    deepStrictEqual(
      thrownIssues(() =>
        parseHermesSettings(
          `model:\n  api_key: ${CANARY}\n  context_length: [65536\n`,
        )
      ),
      [issue(
        "INCONTEXT_HERMES_CONFIG",
        "must be valid YAML (YAMLException at line 4, column 1)",
      )],
    );
  });
  await t.step("several documents or duplicate keys", () => {
    deepStrictEqual(
      thrownIssues(() => parseHermesSettings("model: a\n---\nmodel: b\n")),
      [issue("INCONTEXT_HERMES_CONFIG", "must hold a single YAML document")],
    );
    strictEqual(
      thrownIssues(() => parseHermesSettings("model: a\nmodel: b\n"))[0]?.rule,
      "must be valid YAML (YAMLException at line 2, column 1)",
    );
  });
  await t.step("a top level that is not a mapping", () => {
    for (const text of [`- ${CANARY}\n`, `${CANARY}\n`, "42\n"]) {
      deepStrictEqual(thrownIssues(() => parseHermesSettings(text)), [
        issue(
          "INCONTEXT_HERMES_CONFIG",
          "must hold a YAML mapping at the top level",
        ),
      ]);
    }
  });
  await t.step("sections of the wrong shape", () => {
    deepStrictEqual(
      thrownIssues(() =>
        parseHermesSettings(
          `model: [${CANARY}]\ncompression: ${CANARY}\n`,
        )
      ),
      [
        hermesIssue("model", "must be a mapping or a model name"),
        hermesIssue("compression", "must be a mapping"),
      ],
    );
    deepStrictEqual(
      thrownIssues(() =>
        parseHermesSettings(`compression:\n  model_thresholds: [${CANARY}]\n`)
      ),
      [hermesIssue("compression.model_thresholds", "must be a mapping")],
    );
  });
  await t.step("rejects a text that is not a string", () => {
    throws(() => parseHermesSettings(42 as unknown as string), TypeError);
  });
});

Deno.test("loadHermesSettings() reads a Hermes config.yaml", async (t) => {
  await t.step("a local vLLM set-up behind the proxy", async () => {
    const loaded = await loadHermesSettings(fixture("local_vllm.yaml"));
    deepStrictEqual(loaded, {
      model: {
        default: "Qwen/Qwen3-Coder-30B-A3B-Instruct",
        provider: "custom",
        baseUrl: "http://127.0.0.1:8787/v1",
        contextLength: 65536,
      },
      compression: { enabled: true, threshold: 0.5 },
    });
    strictEqual(hermesWindow(loaded, SEPTEMBER), 55_705);
  });
  await t.step("takes a path string as well as a file URL", async () => {
    deepStrictEqual(
      await loadHermesSettings(fixture("local_vllm.yaml").pathname),
      await loadHermesSettings(fixture("local_vllm.yaml")),
    );
  });
  await t.step(
    "a tuned config with max_tokens, a cap and model thresholds",
    async () => {
      const loaded = await loadHermesSettings(fixture("tuned.yaml"));
      deepStrictEqual(loaded.compression.modelThresholds, {
        "Qwen3-Coder": 0.7,
        "Qwen3-Coder-480B": 0.85,
        "glm-5.2": 0.8,
      });
      // 0.85 (longest key) * (262,144 - 16,384), below the 220,000 cap.
      strictEqual(hermesWindow(loaded, SEPTEMBER), 208_896);
      strictEqual(
        hermesWindow(loaded, { ...SEPTEMBER, model: "glm-5.2" }),
        196_608,
      );
    },
  );
  await t.step("compression disabled", async () => {
    strictEqual(
      hermesWindow(
        await loadHermesSettings(fixture("disabled.yaml")),
        SEPTEMBER,
      ),
      131_072,
    );
  });
  await t.step("the older model form and an empty file", async () => {
    const legacy = await loadHermesSettings(fixture("legacy_model.yaml"));
    deepStrictEqual(legacy.model, { default: "anthropic/claude-sonnet-4" });
    const empty = await loadHermesSettings(fixture("empty.yaml"));
    strictEqual(
      hermesWindow(empty, { ...SEPTEMBER, contextLength: 131_072 }),
      98_304,
    );
  });
});

Deno.test("loadHermesSettings() fails with a ConfigError", async (t) => {
  await t.step(
    "for a missing file, naming the code but not the path",
    async () => {
      const missing = fixture(`${CANARY}.yaml`);
      deepStrictEqual(await rejectedIssues(loadHermesSettings(missing)), [
        issue("INCONTEXT_HERMES_CONFIG", "must name a readable file (ENOENT)"),
      ]);
      deepStrictEqual(
        await rejectedIssues(loadHermesSettings(missing.pathname)),
        [
          issue(
            "INCONTEXT_HERMES_CONFIG",
            "must name a readable file (ENOENT)",
          ),
        ],
      );
    },
  );
  await t.step("for a directory", async () => {
    deepStrictEqual(await rejectedIssues(loadHermesSettings(FIXTURES)), [
      issue("INCONTEXT_HERMES_CONFIG", "must name a readable file (EISDIR)"),
    ]);
  });
  await t.step("for invalid YAML", async () => {
    deepStrictEqual(
      await rejectedIssues(loadHermesSettings(fixture("invalid.yaml"))),
      [
        issue(
          "INCONTEXT_HERMES_CONFIG",
          "must be valid YAML (YAMLException at line 5, column 1)",
        ),
      ],
    );
  });
  await t.step("listing every key of the wrong type", async () => {
    deepStrictEqual(
      await rejectedIssues(loadHermesSettings(fixture("wrong_types.yaml"))),
      [
        hermesIssue("model.default", "must be a string"),
        hermesIssue("model.context_length", "must be a positive integer"),
        hermesIssue("model.max_tokens", "must be a positive integer"),
        hermesIssue("compression.enabled", "must be true or false"),
        hermesIssue(
          "compression.threshold",
          "must be a number greater than 0 and at most 1",
        ),
        hermesIssue(
          "compression.threshold_tokens",
          "must be a positive integer",
        ),
        hermesIssue(
          "compression.model_thresholds",
          "each value must be a number greater than 0 and at most 1",
        ),
      ],
    );
  });
  await rejects(loadHermesSettings(fixture("invalid.yaml")), ConfigError);
});

Deno.test("resolveWindow() picks the window from the environment or Hermes", async (t) => {
  const hermes = parseHermesSettings(`
model:
  default: qwen3-coder-30b
  context_length: 65536
compression:
  model_thresholds: { llama: 0.9 }
`);
  await t.step("INCONTEXT_COMPRESSION_WINDOW_TOKENS overrides Hermes", () => {
    const config = loadConfig({
      ...URL_ENV,
      INCONTEXT_COMPRESSION_WINDOW_TOKENS: "50000",
    });
    strictEqual(resolveWindow(config, hermes), 50_000);
    strictEqual(resolveWindow(config), 50_000);
  });
  await t.step(
    "otherwise mirrors the release INCONTEXT_HERMES_RELEASE names",
    () => {
      strictEqual(resolveWindow(loadConfig(RELEASE_ENV), hermes), 55_705);
      const july = loadConfig({
        ...URL_ENV,
        INCONTEXT_HERMES_RELEASE: "2026-07",
      });
      strictEqual(resolveWindow(july, hermes), 64_000);
    },
  );
  await t.step("without a release, asks for one or for a window", () => {
    deepStrictEqual(
      thrownIssues(() => resolveWindow(loadConfig(URL_ENV), hermes)),
      [
        issue(
          "INCONTEXT_HERMES_RELEASE",
          "is unset: without Hermes installed, set it to the Hermes release whose threshold arithmetic to mirror (2026-07, 0.19 or 2026-09), or set INCONTEXT_COMPRESSION_WINDOW_TOKENS",
        ),
      ],
    );
  });
  await t.step("an unknown release fails loadConfig()", () => {
    throws(
      () => loadConfig({ ...URL_ENV, INCONTEXT_HERMES_RELEASE: "0.18.2" }),
      (error: unknown) => {
        deepStrictEqual(issuesOf(error), [
          issue("INCONTEXT_HERMES_RELEASE", "must be 2026-07, 0.19 or 2026-09"),
        ]);
        return true;
      },
    );
  });
  await t.step(
    "INCONTEXT_CONTEXT_LENGTH and INCONTEXT_MODEL win over the file",
    () => {
      const config = loadConfig({
        ...RELEASE_ENV,
        INCONTEXT_CONTEXT_LENGTH: "1000000",
        INCONTEXT_MODEL: "llama-3.3-70b",
      });
      strictEqual(resolveWindow(config, hermes), 900_000);
      strictEqual(
        resolveWindow(
          { contextLength: 1_000_000, hermesRelease: "2026-09" },
          hermes,
        ),
        500_000,
      );
    },
  );
  await t.step("without either source, names both variables", () => {
    const issues = thrownIssues(() => resolveWindow(loadConfig(URL_ENV)));
    deepStrictEqual(issues, [
      issue(
        "INCONTEXT_COMPRESSION_WINDOW_TOKENS",
        "is unset and so is INCONTEXT_HERMES_CONFIG: set either to give the compression window",
      ),
    ]);
  });
  await t.step("without a context length, names both of its sources", () => {
    const issues = thrownIssues(() =>
      resolveWindow(
        loadConfig(RELEASE_ENV),
        parseHermesSettings("model: qwen\n"),
      )
    );
    strictEqual(issues.length, 1);
    ok(issues[0]?.variable.includes("model.context_length"));
    ok(issues[0]?.rule.includes("INCONTEXT_CONTEXT_LENGTH"));
  });
  await t.step(
    "logs where the window came from, and no model name",
    async () => {
      await using logs = await captureLogs();
      resolveWindow(loadConfig(RELEASE_ENV), hermes);
      resolveWindow({ compressionWindowTokens: 50_000 });
      strictEqual(logs.lines.length, 2);
      ok(logs.lines[0]?.includes("source=hermes"), logs.lines[0]);
      ok(logs.lines[1]?.includes("source=env"), logs.lines[1]);
      ok(logs.lines.every((line) => !line.includes("qwen")));
    },
  );
});
