import { deepStrictEqual, ok, strictEqual, throws } from "node:assert/strict";
import {
  type Config,
  ConfigError as ReExportedConfigError,
  type ConfigIssue,
  loadConfig,
} from "../../src/config/mod.ts";
import { ConfigError } from "../../src/core/config_error.ts";
import { FakeBackend } from "../../src/testing/fake_backend.ts";
import {
  type BackendRegistry,
  createBackendRegistry,
} from "../../src/backends/backend_registry.ts";
import { VERSION } from "../../src/core/version.ts";

type Env = Record<string, string | undefined>;

const URL_ENV = { INCONTEXT_TOKENIZER_URL: "http://127.0.0.1:8000/tokenize" };

/** A registry whose only backend, `acme`, requires what it is told to. */
function acmeRegistry(requires: readonly string[] = []): BackendRegistry {
  const registry = createBackendRegistry();
  registry.plugin("acme", () => new FakeBackend(), { requires });
  return registry;
}

/** Loads with the bundled registry and a valid tokenizer URL, so only `env` can be wrong. */
function load(env: Env): Config {
  return loadConfig({ ...URL_ENV, ...env });
}

/** The issues `loadConfig(env)` throws; fails when it does not throw a ConfigError. */
function issuesOf(env: Env, registry?: BackendRegistry): ConfigIssue[] {
  try {
    loadConfig(env, registry === undefined ? {} : { registry });
  } catch (error) {
    ok(error instanceof ConfigError, `expected a ConfigError, got ${error}`);
    return [...error.issues];
  }
  throw new Error("expected loadConfig() to throw");
}

/** The issues for `env` on top of a valid tokenizer URL. */
function issues(env: Env): ConfigIssue[] {
  return issuesOf({ ...URL_ENV, ...env });
}

function issue(variable: string, rule: string): ConfigIssue {
  return { variable, rule };
}

Deno.test("loadConfig() applies the defaults", async (t) => {
  await t.step("fills every default around the required URL", () => {
    deepStrictEqual(loadConfig(URL_ENV), {
      backend: "vllm",
      tokenizerUrl: "http://127.0.0.1:8000/tokenize",
      tokenizerTimeoutSeconds: 30,
      tokenizerUserAgent: `incontext/${VERSION}`,
      fallbackMarginTokens: 1024,
      minOutputTokens: 4096,
      backendModules: [],
      cacheEntries: 4096,
      listen: "127.0.0.1:8787",
      onExhausted: "clamp",
      checkChat: false,
      anchorEntries: 4096,
      anchorTolerance: 0.02,
      maxRequestBytes: 33554432,
      maxHeaderBytes: 65536,
      upstreamTimeoutSeconds: 600,
      upstreamIdleTimeoutSeconds: 600,
      shutdownGraceSeconds: 30,
      sharedTtlSeconds: 86400,
      sharedTimeoutMs: 5,
      headersTimeoutSeconds: 30,
      requestTimeoutSeconds: 300,
      keepAliveTimeoutSeconds: 75,
      maxConnections: 512,
      contextEndpoint: true,
      logLevel: "info",
      logFormat: "text",
    });
  });
  await t.step("leaves the optional values absent, not undefined", () => {
    const config = loadConfig(URL_ENV);
    for (
      const key of [
        "tokenizerApiKey",
        "compressionWindowTokens",
        "contextLength",
        "model",
        "hermesConfig",
        "upstreamUrl",
      ]
    ) {
      ok(!(key in config), key);
    }
  });
  await t.step("returns a frozen object", () => {
    const config = loadConfig(URL_ENV);
    ok(Object.isFrozen(config));
    ok(Object.isFrozen(config.backendModules));
  });
  await t.step("ignores unrelated and undefined variables", () => {
    deepStrictEqual(
      load({ PATH: "/bin", INCONTEXT_MODEL: undefined }),
      loadConfig(URL_ENV),
    );
  });
});

Deno.test("loadConfig() reads the backend and tokenizer variables", async (t) => {
  await t.step("INCONTEXT_BACKEND selects any name", () => {
    strictEqual(
      loadConfig({ INCONTEXT_BACKEND: "acme" }, { registry: acmeRegistry() })
        .backend,
      "acme",
    );
  });
  await t.step("INCONTEXT_TOKENIZER_URL accepts http(s) with a query", () => {
    for (
      const url of [
        "http://127.0.0.1:8000/tokenize",
        "https://tokenizer.example.com/tokenize?model=m",
        "http://[::1]:8000/tokenize",
      ]
    ) {
      strictEqual(
        loadConfig({ INCONTEXT_TOKENIZER_URL: url }).tokenizerUrl,
        url,
      );
    }
  });
  await t.step(
    "INCONTEXT_TOKENIZER_URL rejects what checkHttpUrl rejects",
    () => {
      const cases: [string, string][] = [
        ["not a url", "must be an absolute http(s) URL with a valid port"],
        ["ftp://example.com/tokenize", "must use http or https"],
        ["http:///tokenize", "must name a host"],
        ["http://example.com:0/tokenize", "must not use port 0"],
        [
          "http://example.com:99999/",
          "must be an absolute http(s) URL with a valid port",
        ],
        ["http://example.com/tokenize#top", "must not contain a fragment"],
        [
          "http://user:pass@example.com/",
          "must not contain user:password (use INCONTEXT_TOKENIZER_API_KEY)",
        ],
      ];
      for (const [url, rule] of cases) {
        deepStrictEqual(issuesOf({ INCONTEXT_TOKENIZER_URL: url }), [
          issue("INCONTEXT_TOKENIZER_URL", rule),
        ], url);
      }
    },
  );
  await t.step(
    "INCONTEXT_TOKENIZER_TIMEOUT_SECONDS accepts finite decimals > 0",
    () => {
      for (
        const [value, seconds] of [["30", 30], ["0.5", 0.5], [".25", 0.25], [
          "2.",
          2,
        ], ["2147483", 2147483]] as const
      ) {
        strictEqual(
          load({ INCONTEXT_TOKENIZER_TIMEOUT_SECONDS: value })
            .tokenizerTimeoutSeconds,
          seconds,
        );
      }
    },
  );
  await t.step(
    "INCONTEXT_TOKENIZER_TIMEOUT_SECONDS rejects other forms",
    () => {
      const rule = "must be a finite number of seconds greater than 0";
      for (
        const value of [
          "0",
          "0.0",
          "-1",
          "1e3",
          "Infinity",
          "NaN",
          "0x10",
          "12abc",
          "1,5",
          ".",
        ]
      ) {
        deepStrictEqual(
          issues({ INCONTEXT_TOKENIZER_TIMEOUT_SECONDS: value }),
          [
            issue("INCONTEXT_TOKENIZER_TIMEOUT_SECONDS", rule),
          ],
          value,
        );
      }
    },
  );
  await t.step(
    "INCONTEXT_TOKENIZER_TIMEOUT_SECONDS stays within what a timer can wait",
    () => {
      deepStrictEqual(
        issues({ INCONTEXT_TOKENIZER_TIMEOUT_SECONDS: "2147484" }),
        [
          issue(
            "INCONTEXT_TOKENIZER_TIMEOUT_SECONDS",
            "must be at most 2147483 seconds",
          ),
        ],
      );
    },
  );
  await t.step("INCONTEXT_TOKENIZER_USER_AGENT takes any header value", () => {
    strictEqual(
      load({
        INCONTEXT_TOKENIZER_USER_AGENT: "acme-gateway/2.1 (ops@example.com) é",
      })
        .tokenizerUserAgent,
      "acme-gateway/2.1 (ops@example.com) é",
    );
  });
  await t.step(
    "INCONTEXT_TOKENIZER_USER_AGENT rejects what fetch would refuse",
    () => {
      for (const value of ["a\nb", "a\rb", "a\0b", "agent \u4e2d"]) {
        deepStrictEqual(issues({ INCONTEXT_TOKENIZER_USER_AGENT: value }), [
          issue(
            "INCONTEXT_TOKENIZER_USER_AGENT",
            "must be a valid HTTP header value",
          ),
        ], JSON.stringify(value));
      }
    },
  );
  await t.step(
    "INCONTEXT_TOKENIZER_API_KEY is read, trimmed and checked",
    () => {
      strictEqual(
        load({ INCONTEXT_TOKENIZER_API_KEY: " sk-123 " }).tokenizerApiKey,
        "sk-123",
      );
      deepStrictEqual(issues({ INCONTEXT_TOKENIZER_API_KEY: "sk-1\n23" }), [
        issue(
          "INCONTEXT_TOKENIZER_API_KEY",
          "must be a valid HTTP header value",
        ),
      ]);
      deepStrictEqual(issues({ INCONTEXT_TOKENIZER_API_KEY: "  " }), [
        issue("INCONTEXT_TOKENIZER_API_KEY", "must not be blank"),
      ]);
    },
  );
});

Deno.test("loadConfig() reads the token variables as decimal integers", async (t) => {
  const BAD = [
    "4096.5",
    "1e3",
    "0x10",
    "12abc",
    "+5",
    "-1",
    "1 000",
    "Infinity",
  ];
  const positive: [string, keyof Config][] = [
    ["INCONTEXT_COMPRESSION_WINDOW_TOKENS", "compressionWindowTokens"],
    ["INCONTEXT_MIN_OUTPUT_TOKENS", "minOutputTokens"],
    ["INCONTEXT_CONTEXT_LENGTH", "contextLength"],
    ["INCONTEXT_CACHE_ENTRIES", "cacheEntries"],
  ];
  for (const [variable, key] of positive) {
    await t.step(`${variable} accepts integers > 0 and nothing else`, () => {
      // Large enough for the window rules to hold with the default F and R.
      strictEqual(load({ [variable]: "5121" })[key], 5121);
      strictEqual(load({ [variable]: "0065536" })[key], 65536);
      for (const value of ["0", "00", ...BAD]) {
        deepStrictEqual(issues({ [variable]: value }), [
          issue(variable, "must be a positive integer"),
        ], value);
      }
    });
  }
  await t.step("INCONTEXT_FALLBACK_MARGIN_TOKENS accepts integers >= 0", () => {
    strictEqual(
      load({ INCONTEXT_FALLBACK_MARGIN_TOKENS: "0" }).fallbackMarginTokens,
      0,
    );
    strictEqual(
      load({ INCONTEXT_FALLBACK_MARGIN_TOKENS: "2048" }).fallbackMarginTokens,
      2048,
    );
    for (const value of BAD) {
      deepStrictEqual(issues({ INCONTEXT_FALLBACK_MARGIN_TOKENS: value }), [
        issue(
          "INCONTEXT_FALLBACK_MARGIN_TOKENS",
          "must be a non-negative integer",
        ),
      ], value);
    }
  });
  await t.step("rejects integers beyond Number.MAX_SAFE_INTEGER", () => {
    deepStrictEqual(issues({ INCONTEXT_CACHE_ENTRIES: "9007199254740992" }), [
      issue("INCONTEXT_CACHE_ENTRIES", "must be at most 9007199254740991"),
    ]);
  });
});

Deno.test("loadConfig() reads the model, the Hermes config path and the backend modules", async (t) => {
  await t.step("INCONTEXT_MODEL is trimmed", () => {
    strictEqual(
      load({ INCONTEXT_MODEL: "  Qwen/Qwen3-8B \n" }).model,
      "Qwen/Qwen3-8B",
    );
  });
  await t.step(
    "INCONTEXT_BUDGET_MODEL sets the budgeted model and wins over its alias INCONTEXT_MODEL",
    () => {
      strictEqual(load({ INCONTEXT_BUDGET_MODEL: "a" }).model, "a");
      strictEqual(
        load({ INCONTEXT_BUDGET_MODEL: "a", INCONTEXT_MODEL: "b" }).model,
        "a",
      );
    },
  );
  await t.step(
    "INCONTEXT_COUNT_MODEL is the hosted backends' model, apart from the budgeted one",
    () => {
      const config = load({ INCONTEXT_COUNT_MODEL: "claude-haiku-4-5" });
      strictEqual(config.countModel, "claude-haiku-4-5");
      strictEqual(config.model, undefined);
      strictEqual(load({ INCONTEXT_MODEL: "m" }).countModel, undefined);
    },
  );
  await t.step(
    "INCONTEXT_HERMES_CONFIG is a trimmed path, not read at load time",
    () => {
      strictEqual(
        load({ INCONTEXT_HERMES_CONFIG: " /home/hermes/.hermes/config.yaml\n" })
          .hermesConfig,
        "/home/hermes/.hermes/config.yaml",
      );
      // The file is read by loadHermesSettings(), so a path that does not
      // exist yet is still a valid setting here.
      strictEqual(
        load({ INCONTEXT_HERMES_CONFIG: "./no-such-dir/config.yaml" })
          .hermesConfig,
        "./no-such-dir/config.yaml",
      );
    },
  );
  await t.step(
    "INCONTEXT_BACKEND_MODULES splits on commas and trims each item",
    () => {
      deepStrictEqual(
        load({
          INCONTEXT_BACKEND_MODULES:
            "jsr:@acme/backend@1, npm:acme-backend ,file:///opt/acme/backend.ts",
        }).backendModules,
        [
          "jsr:@acme/backend@1",
          "npm:acme-backend",
          "file:///opt/acme/backend.ts",
        ],
      );
    },
  );
  await t.step(
    "INCONTEXT_BACKEND_MODULES reports each bad item by position",
    () => {
      const variable = "INCONTEXT_BACKEND_MODULES";
      deepStrictEqual(issues({ [variable]: "jsr:@acme/a,,npm:b," }), [
        issue(variable, "item 2 must not be empty"),
        issue(variable, "item 4 must not be empty"),
      ]);
      deepStrictEqual(
        issues({ [variable]: "https://example.com/b.ts, jsr:, ./b.ts" }),
        [
          issue(
            variable,
            "item 1 must be a jsr:, npm: or file: module specifier",
          ),
          issue(
            variable,
            "item 2 must be a jsr:, npm: or file: module specifier",
          ),
          issue(
            variable,
            "item 3 must be a jsr:, npm: or file: module specifier",
          ),
        ],
      );
    },
  );
});

Deno.test("loadConfig() treats blank values as errors", async (t) => {
  const variables = [
    "INCONTEXT_BACKEND",
    "INCONTEXT_TOKENIZER_URL",
    "INCONTEXT_TOKENIZER_TIMEOUT_SECONDS",
    "INCONTEXT_TOKENIZER_USER_AGENT",
    "INCONTEXT_TOKENIZER_API_KEY",
    "INCONTEXT_FALLBACK_MARGIN_TOKENS",
    "INCONTEXT_COMPRESSION_WINDOW_TOKENS",
    "INCONTEXT_MIN_OUTPUT_TOKENS",
    "INCONTEXT_CONTEXT_LENGTH",
    "INCONTEXT_MODEL",
    "INCONTEXT_BUDGET_MODEL",
    "INCONTEXT_COUNT_MODEL",
    "INCONTEXT_HERMES_CONFIG",
    "INCONTEXT_BACKEND_MODULES",
    "INCONTEXT_CACHE_ENTRIES",
  ];
  for (const variable of variables) {
    await t.step(`${variable} must not be empty or whitespace`, () => {
      for (const value of ["", " \t\n "]) {
        deepStrictEqual(issues({ [variable]: value }), [
          issue(variable, "must not be blank"),
        ]);
      }
    });
  }
});

Deno.test("loadConfig() trims values", () => {
  const config = loadConfig({
    INCONTEXT_BACKEND: "  vllm ",
    INCONTEXT_TOKENIZER_URL: "\thttp://127.0.0.1:8000/tokenize\n",
    INCONTEXT_TOKENIZER_TIMEOUT_SECONDS: " 2.5 ",
    INCONTEXT_TOKENIZER_USER_AGENT: " agent/1 ",
    INCONTEXT_COMPRESSION_WINDOW_TOKENS: " 64000 ",
    INCONTEXT_CONTEXT_LENGTH: "\n65536\n",
  });
  strictEqual(config.backend, "vllm");
  strictEqual(config.tokenizerUrl, "http://127.0.0.1:8000/tokenize");
  strictEqual(config.tokenizerTimeoutSeconds, 2.5);
  strictEqual(config.tokenizerUserAgent, "agent/1");
  strictEqual(config.compressionWindowTokens, 64000);
  strictEqual(config.contextLength, 65536);
});

Deno.test("loadConfig() accepts the legacy aliases", async (t) => {
  const aliases: [string, string, string, keyof Config, unknown][] = [
    [
      "INCONTEXT_BACKEND",
      "HERMES_DYNAMIC_BUDGET_BACKEND",
      "acme",
      "backend",
      "acme",
    ],
    [
      "INCONTEXT_TOKENIZER_URL",
      "HERMES_VLLM_TOKENIZER_URL",
      "http://h:1/t",
      "tokenizerUrl",
      "http://h:1/t",
    ],
    [
      "INCONTEXT_TOKENIZER_TIMEOUT_SECONDS",
      "HERMES_VLLM_TOKENIZER_TIMEOUT_SECONDS",
      "5",
      "tokenizerTimeoutSeconds",
      5,
    ],
    [
      "INCONTEXT_TOKENIZER_USER_AGENT",
      "HERMES_VLLM_TOKENIZER_USER_AGENT",
      "ua/1",
      "tokenizerUserAgent",
      "ua/1",
    ],
    [
      "INCONTEXT_FALLBACK_MARGIN_TOKENS",
      "HERMES_DYNAMIC_BUDGET_FALLBACK_MARGIN_TOKENS",
      "7",
      "fallbackMarginTokens",
      7,
    ],
    [
      "INCONTEXT_COMPRESSION_WINDOW_TOKENS",
      "HERMES_DYNAMIC_BUDGET_COMPRESSION_WINDOW_TOKENS",
      "60000",
      "compressionWindowTokens",
      60000,
    ],
    [
      "INCONTEXT_MIN_OUTPUT_TOKENS",
      "HERMES_DYNAMIC_BUDGET_MIN_OUTPUT_TOKENS",
      "9",
      "minOutputTokens",
      9,
    ],
  ];
  const registry = acmeRegistry();
  for (const [primary, alias, value, key, expected] of aliases) {
    await t.step(`${alias} stands in for ${primary}`, () => {
      strictEqual(
        loadConfig({ [alias]: ` ${value} ` }, { registry })[key],
        expected,
      );
    });
    await t.step(`${primary} wins over ${alias}`, () => {
      const config = loadConfig({ [primary]: value, [alias]: "  invalid !" }, {
        registry,
      });
      strictEqual(config[key], expected);
    });
    await t.step(
      `a blank ${primary} is an error even when ${alias} is valid`,
      () => {
        deepStrictEqual(
          issuesOf({ [primary]: " ", [alias]: value }, registry),
          [
            issue(primary, "must not be blank"),
          ],
        );
      },
    );
  }
  await t.step(
    "reports the alias's name when the bad value came from it",
    () => {
      deepStrictEqual(
        issuesOf({
          HERMES_VLLM_TOKENIZER_URL: "ftp://example.com/",
          HERMES_DYNAMIC_BUDGET_MIN_OUTPUT_TOKENS: "many",
          HERMES_DYNAMIC_BUDGET_BACKEND: "",
        }),
        [
          issue(
            "HERMES_DYNAMIC_BUDGET_MIN_OUTPUT_TOKENS",
            "must be a positive integer",
          ),
          issue("HERMES_DYNAMIC_BUDGET_BACKEND", "must not be blank"),
          issue("HERMES_VLLM_TOKENIZER_URL", "must use http or https"),
        ],
      );
    },
  );
  await t.step(
    "has no alias for the API key, the context length or the model",
    () => {
      const config = load({
        HERMES_VLLM_TOKENIZER_API_KEY: "sk-1",
        HERMES_DYNAMIC_BUDGET_CONTEXT_LENGTH: "8192",
        HERMES_DYNAMIC_BUDGET_MODEL: "m",
      });
      ok(!("tokenizerApiKey" in config));
      ok(!("contextLength" in config));
      ok(!("model" in config));
    },
  );
});

Deno.test("loadConfig() checks the window against the other token limits", async (t) => {
  const W = "INCONTEXT_COMPRESSION_WINDOW_TOKENS";
  const F = "INCONTEXT_FALLBACK_MARGIN_TOKENS";
  const R = "INCONTEXT_MIN_OUTPUT_TOKENS";
  const C = "INCONTEXT_CONTEXT_LENGTH";
  await t.step("accepts F + R just below W and W equal to C", () => {
    const config = load({ [W]: "5121", [C]: "5121" });
    strictEqual(config.compressionWindowTokens, 5121);
  });
  await t.step("applies no window rule while the window is unset", () => {
    strictEqual(
      load({ [F]: "100000", [R]: "100000", [C]: "1" }).minOutputTokens,
      100000,
    );
  });
  await t.step("W must not exceed C", () => {
    deepStrictEqual(issues({ [W]: "5122", [C]: "5121" }), [
      issue(W, `must not exceed ${C}`),
    ]);
  });
  await t.step("F + R must be less than W", () => {
    deepStrictEqual(issues({ [W]: "5120", [F]: "1024", [R]: "4096" }), [
      issue(R, `plus ${F} must be less than ${W}`),
    ]);
  });
  await t.step("F must be less than W", () => {
    deepStrictEqual(issues({ [W]: "1000", [F]: "1000", [R]: "1" }), [
      issue(F, `must be less than ${W}`),
      issue(R, `plus ${F} must be less than ${W}`),
    ]);
  });
  await t.step("R must be less than W", () => {
    deepStrictEqual(issues({ [W]: "1000", [F]: "0", [R]: "1000" }), [
      issue(R, `must be less than ${W}`),
    ]);
  });
  await t.step("says when an unset variable's default breaks a rule", () => {
    deepStrictEqual(issues({ [W]: "4096" }), [
      issue(R, `must be less than ${W} (it is unset, so its default applies)`),
    ]);
    deepStrictEqual(issues({ [W]: "1024", [R]: "1" }), [
      issue(F, `must be less than ${W} (it is unset, so its default applies)`),
      issue(R, `plus ${F} must be less than ${W}`),
    ]);
  });
  await t.step("names the legacy aliases the values came from", () => {
    deepStrictEqual(
      issues({
        HERMES_DYNAMIC_BUDGET_COMPRESSION_WINDOW_TOKENS: "100",
        HERMES_DYNAMIC_BUDGET_FALLBACK_MARGIN_TOKENS: "50",
        HERMES_DYNAMIC_BUDGET_MIN_OUTPUT_TOKENS: "50",
        [C]: "99",
      }),
      [
        issue(
          "HERMES_DYNAMIC_BUDGET_COMPRESSION_WINDOW_TOKENS",
          `must not exceed ${C}`,
        ),
        issue(
          "HERMES_DYNAMIC_BUDGET_MIN_OUTPUT_TOKENS",
          "plus HERMES_DYNAMIC_BUDGET_FALLBACK_MARGIN_TOKENS must be less than HERMES_DYNAMIC_BUDGET_COMPRESSION_WINDOW_TOKENS",
        ),
      ],
    );
  });
  await t.step("skips rules whose inputs are already reported invalid", () => {
    deepStrictEqual(issues({ [W]: "100", [F]: "x", [R]: "y", [C]: "z" }), [
      issue(R, "must be a positive integer"),
      issue(F, "must be a non-negative integer"),
      issue(C, "must be a positive integer"),
    ]);
    deepStrictEqual(issues({ [W]: "0", [F]: "5000", [C]: "1" }), [
      issue(W, "must be a positive integer"),
    ]);
  });
});

Deno.test("loadConfig() reports every bad variable in one ConfigError", () => {
  let caught: unknown;
  try {
    loadConfig({
      INCONTEXT_TOKENIZER_URL: "http://example.com/#x",
      INCONTEXT_TOKENIZER_TIMEOUT_SECONDS: "soon",
      INCONTEXT_CACHE_ENTRIES: "-5",
      INCONTEXT_MODEL: " ",
      INCONTEXT_COMPRESSION_WINDOW_TOKENS: "4000",
    });
  } catch (e) {
    caught = e;
  }
  ok(caught instanceof ConfigError);
  strictEqual(caught.name, "ConfigError");
  deepStrictEqual(caught.issues, [
    issue("INCONTEXT_TOKENIZER_URL", "must not contain a fragment"),
    issue(
      "INCONTEXT_TOKENIZER_TIMEOUT_SECONDS",
      "must be a finite number of seconds greater than 0",
    ),
    issue("INCONTEXT_CACHE_ENTRIES", "must be a positive integer"),
    issue("INCONTEXT_MODEL", "must not be blank"),
    issue(
      "INCONTEXT_MIN_OUTPUT_TOKENS",
      "must be less than INCONTEXT_COMPRESSION_WINDOW_TOKENS (it is unset, so its default applies)",
    ),
  ]);
  for (const { variable, rule } of caught.issues) {
    ok(caught.message.includes(`${variable} ${rule}`), variable);
  }
});

Deno.test("loadConfig() never echoes a value", async (t) => {
  const CANARY = "sk-canary-7f3a9c";
  const assertAbsent = (env: Env) => {
    let caught: unknown;
    try {
      loadConfig(env);
    } catch (e) {
      caught = e;
    }
    ok(caught instanceof ConfigError, "expected a ConfigError");
    const texts = [
      caught.message,
      String(caught),
      caught.stack ?? "",
      JSON.stringify(caught.issues),
    ];
    for (const text of texts) ok(!text.includes(CANARY), "a value leaked");
    strictEqual(caught.cause, undefined);
  };
  await t.step("not the API key, when it is invalid", () => {
    assertAbsent({
      ...URL_ENV,
      INCONTEXT_TOKENIZER_API_KEY: `${CANARY}\n` + CANARY,
    });
  });
  await t.step("not the API key, when another variable is invalid", () => {
    assertAbsent({
      ...URL_ENV,
      INCONTEXT_TOKENIZER_API_KEY: CANARY,
      INCONTEXT_CACHE_ENTRIES: "0",
    });
  });
  await t.step("not the credentials in a tokenizer URL", () => {
    assertAbsent({
      INCONTEXT_TOKENIZER_URL: `https://user:${CANARY}@example.com/tokenize`,
    });
    assertAbsent({
      HERMES_VLLM_TOKENIZER_URL:
        `https://${CANARY}@example.com/tokenize#${CANARY}`,
    });
  });
  await t.step("not any other variable's value", () => {
    const env: Env = {};
    for (
      const variable of [
        "INCONTEXT_TOKENIZER_URL",
        "INCONTEXT_TOKENIZER_TIMEOUT_SECONDS",
        "INCONTEXT_FALLBACK_MARGIN_TOKENS",
        "INCONTEXT_COMPRESSION_WINDOW_TOKENS",
        "INCONTEXT_MIN_OUTPUT_TOKENS",
        "INCONTEXT_CONTEXT_LENGTH",
        "INCONTEXT_BACKEND_MODULES",
        "INCONTEXT_CACHE_ENTRIES",
      ]
    ) {
      env[variable] = CANARY;
    }
    env.INCONTEXT_TOKENIZER_USER_AGENT = `${CANARY}\u4e2d`;
    assertAbsent(env);
  });
});

Deno.test("loadConfig() requires what the selected backend requires", async (t) => {
  await t.step("vllm needs a tokenizer URL", () => {
    deepStrictEqual(issuesOf({}), [
      issue("INCONTEXT_TOKENIZER_URL", "is required by the 'vllm' backend"),
    ]);
  });
  await t.step("the legacy URL alias satisfies vllm", () => {
    strictEqual(
      loadConfig({ HERMES_VLLM_TOKENIZER_URL: "http://h:1/t" }).tokenizerUrl,
      "http://h:1/t",
    );
  });
  await t.step(
    "a blank or invalid URL is reported once, not also as missing",
    () => {
      deepStrictEqual(issuesOf({ INCONTEXT_TOKENIZER_URL: "" }), [
        issue("INCONTEXT_TOKENIZER_URL", "must not be blank"),
      ]);
    },
  );
  await t.step("a backend without requirements needs no URL", () => {
    const config = loadConfig({ INCONTEXT_BACKEND: "acme" }, {
      registry: acmeRegistry(),
    });
    strictEqual(config.backend, "acme");
    ok(!("tokenizerUrl" in config));
  });
  await t.step("the registry in the options is the one consulted", () => {
    // The fresh registry has no vllm entry, so vllm requires nothing there.
    strictEqual(loadConfig({}, { registry: acmeRegistry() }).backend, "vllm");
  });
  await t.step("a plugin's own variables are checked by name", () => {
    const registry = acmeRegistry(["ACME_TOKEN"]);
    const env = { INCONTEXT_BACKEND: "acme" };
    deepStrictEqual(issuesOf(env, registry), [
      issue("ACME_TOKEN", "is required by the 'acme' backend"),
    ]);
    deepStrictEqual(issuesOf({ ...env, ACME_TOKEN: " " }, registry), [
      issue("ACME_TOKEN", "must not be blank"),
    ]);
    strictEqual(
      loadConfig({ ...env, ACME_TOKEN: "t" }, { registry }).backend,
      "acme",
    );
  });
  await t.step(
    "an unknown backend is left for backends.load() to report",
    () => {
      strictEqual(
        loadConfig({ INCONTEXT_BACKEND: "not-registered-yet" }).backend,
        "not-registered-yet",
      );
    },
  );
  await t.step("a blank backend reports only the blank value", () => {
    deepStrictEqual(issuesOf({ INCONTEXT_BACKEND: " " }), [
      issue("INCONTEXT_BACKEND", "must not be blank"),
    ]);
  });
});

Deno.test("ConfigError is re-exported by the ./config entry", () => {
  strictEqual(ReExportedConfigError, ConfigError);
});

Deno.test("loadConfig() reads the proxy's variables", async (t) => {
  await t.step("valid values", () => {
    const config = loadConfig({
      ...URL_ENV,
      INCONTEXT_UPSTREAM_URL: "http://127.0.0.1:8000",
      INCONTEXT_LISTEN: "[::1]:9000",
      INCONTEXT_ON_EXHAUSTED: "reject",
      INCONTEXT_ANCHOR_ENTRIES: "10",
      INCONTEXT_ANCHOR_TOLERANCE: "5%",
      INCONTEXT_MAX_REQUEST_BYTES: "1024",
      INCONTEXT_UPSTREAM_TIMEOUT_SECONDS: "120",
      INCONTEXT_UPSTREAM_IDLE_TIMEOUT_SECONDS: "2.5",
      INCONTEXT_SHUTDOWN_GRACE_SECONDS: "10",
      INCONTEXT_LOG_LEVEL: "debug",
      INCONTEXT_LOG_FORMAT: "json",
    });
    strictEqual(config.logLevel, "debug");
    strictEqual(config.logFormat, "json");
    strictEqual(config.upstreamUrl, "http://127.0.0.1:8000");
    strictEqual(config.listen, "[::1]:9000");
    strictEqual(config.onExhausted, "reject");
    strictEqual(config.anchorEntries, 10);
    strictEqual(config.anchorTolerance, 0.05);
    strictEqual(config.maxRequestBytes, 1024);
    strictEqual(config.upstreamTimeoutSeconds, 120);
    strictEqual(config.upstreamIdleTimeoutSeconds, 2.5);
    strictEqual(config.shutdownGraceSeconds, 10);
    strictEqual(
      loadConfig({ ...URL_ENV, INCONTEXT_ANCHOR_TOLERANCE: "0.1" })
        .anchorTolerance,
      0.1,
    );
  });
  await t.step("every bad value is named", () => {
    throws(
      () =>
        loadConfig({
          ...URL_ENV,
          INCONTEXT_UPSTREAM_URL: "ftp://x",
          INCONTEXT_LISTEN: "127.0.0.1:0",
          INCONTEXT_ON_EXHAUSTED: "drop",
          INCONTEXT_ANCHOR_ENTRIES: "0",
          INCONTEXT_ANCHOR_TOLERANCE: "100%",
          INCONTEXT_MAX_REQUEST_BYTES: "1e6",
          INCONTEXT_UPSTREAM_TIMEOUT_SECONDS: "0",
          INCONTEXT_UPSTREAM_IDLE_TIMEOUT_SECONDS: "-1",
          INCONTEXT_SHUTDOWN_GRACE_SECONDS: "forever",
          INCONTEXT_LOG_LEVEL: "verbose",
          INCONTEXT_LOG_FORMAT: "xml",
        }),
      (error: unknown) => {
        ok(error instanceof ConfigError);
        deepStrictEqual(error.issues.map((i) => i.variable), [
          "INCONTEXT_ANCHOR_ENTRIES",
          "INCONTEXT_UPSTREAM_URL",
          "INCONTEXT_ON_EXHAUSTED",
          "INCONTEXT_ANCHOR_TOLERANCE",
          "INCONTEXT_UPSTREAM_TIMEOUT_SECONDS",
          "INCONTEXT_UPSTREAM_IDLE_TIMEOUT_SECONDS",
          "INCONTEXT_LISTEN",
          "INCONTEXT_MAX_REQUEST_BYTES",
          "INCONTEXT_SHUTDOWN_GRACE_SECONDS",
          "INCONTEXT_LOG_LEVEL",
          "INCONTEXT_LOG_FORMAT",
        ]);
        return true;
      },
    );
  });
});

Deno.test("loadConfig() reads the local backend's variables", async (t) => {
  const sha = "AB".repeat(32);
  await t.step("the folder, the template and the hash", () => {
    const config = loadConfig({
      INCONTEXT_BACKEND: "local",
      INCONTEXT_TOKENIZER_DIR: "/models/qwen3",
      INCONTEXT_CHAT_TEMPLATE: "{{ messages }}",
      INCONTEXT_TOKENIZER_SHA256: sha,
    });
    strictEqual(config.tokenizerDir, "/models/qwen3");
    strictEqual(config.chatTemplate, "{{ messages }}");
    strictEqual(config.tokenizerSha256, "ab".repeat(32));
    strictEqual(config.tokenizerUrl, undefined);
  });
  await t.step("local requires INCONTEXT_TOKENIZER_DIR, not the URL", () => {
    throws(() => loadConfig({ INCONTEXT_BACKEND: "local" }), (error) => {
      ok(error instanceof ConfigError);
      deepStrictEqual(error.issues.map((i) => i.variable), [
        "INCONTEXT_TOKENIZER_DIR",
      ]);
      return true;
    });
  });
  await t.step("INCONTEXT_TOKENIZER_SHA256 must be 64 hex characters", () => {
    for (const bad of ["ab", "g".repeat(64), "a".repeat(65)]) {
      throws(
        () => loadConfig({ ...URL_ENV, INCONTEXT_TOKENIZER_SHA256: bad }),
        (error) => {
          ok(error instanceof ConfigError);
          deepStrictEqual(error.issues, [{
            variable: "INCONTEXT_TOKENIZER_SHA256",
            rule: "must be 64 hexadecimal characters",
          }]);
          return true;
        },
      );
    }
  });
  await t.step(
    "INCONTEXT_CHAT_TEMPLATE_CONTENT_FORMAT is auto, string or openai",
    () => {
      strictEqual(loadConfig(URL_ENV).chatTemplateContentFormat, undefined);
      for (const format of ["auto", "string", "openai"]) {
        strictEqual(
          loadConfig({
            ...URL_ENV,
            INCONTEXT_CHAT_TEMPLATE_CONTENT_FORMAT: format,
          }).chatTemplateContentFormat,
          format,
        );
      }
      throws(
        () =>
          loadConfig({
            ...URL_ENV,
            INCONTEXT_CHAT_TEMPLATE_CONTENT_FORMAT: "OpenAI",
          }),
        (error) => {
          ok(error instanceof ConfigError);
          deepStrictEqual(error.issues, [{
            variable: "INCONTEXT_CHAT_TEMPLATE_CONTENT_FORMAT",
            rule: "must be auto, string or openai",
          }]);
          return true;
        },
      );
    },
  );
  await t.step("INCONTEXT_VLLM_VERSION names a vLLM release mirrored", () => {
    strictEqual(loadConfig(URL_ENV).vllmVersion, undefined);
    strictEqual(
      loadConfig({ ...URL_ENV, INCONTEXT_VLLM_VERSION: "0.15.1" }).vllmVersion,
      "0.15.1",
    );
    const cases: [string, string][] = [
      ["latest", "must be a vLLM version such as 0.16.0"],
      ["0.11.2", "must be 0.12.0 or newer (the oldest release mirrored)"],
    ];
    for (const [bad, rule] of cases) {
      throws(
        () => loadConfig({ ...URL_ENV, INCONTEXT_VLLM_VERSION: bad }),
        (error) => {
          ok(error instanceof ConfigError);
          deepStrictEqual(error.issues, [{
            variable: "INCONTEXT_VLLM_VERSION",
            rule,
          }]);
          return true;
        },
      );
    }
  });
  await t.step(
    "INCONTEXT_VLLM_TOKENIZER_MODE names one of vLLM's tokenizer modes",
    () => {
      strictEqual(loadConfig(URL_ENV).vllmTokenizerMode, undefined);
      strictEqual(
        loadConfig({ ...URL_ENV, INCONTEXT_VLLM_TOKENIZER_MODE: "DeepSeek_V4" })
          .vllmTokenizerMode,
        "deepseek_v4",
      );
      strictEqual(
        loadConfig({ ...URL_ENV, INCONTEXT_VLLM_TOKENIZER_MODE: "mistral" })
          .vllmTokenizerMode,
        "mistral",
      );
      throws(
        () =>
          loadConfig({ ...URL_ENV, INCONTEXT_VLLM_TOKENIZER_MODE: "deepseek" }),
        (error) => {
          ok(error instanceof ConfigError);
          deepStrictEqual(error.issues, [{
            variable: "INCONTEXT_VLLM_TOKENIZER_MODE",
            rule:
              "must be one of vLLM's tokenizer modes: auto, hf, slow, mistral, deepseek_v32, deepseek_v4, fastokens, grok2, kimi_audio, qwen_vl",
          }]);
          return true;
        },
      );
    },
  );
});
