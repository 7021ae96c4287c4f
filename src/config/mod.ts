/**
 * Typed configuration from environment variables, and the backend it
 * selects: {@linkcode loadConfig} reads `INCONTEXT_*` variables (and the
 * original plugin's legacy aliases), applies the defaults and checks every
 * rule at once, so a bad environment fails at startup with one
 * {@linkcode ConfigError} that lists every problem. {@linkcode backends}
 * binds each backend name to a lazy factory: `backends.load(config.backend,
 * config)` imports and builds the selected backend alone, and
 * {@linkcode loadBackendModules} imports third-party modules that register
 * more names.
 *
 * @example Loading the configuration of a vLLM deployment
 * ```ts
 * import { loadConfig } from "@incontext/incontext/config";
 * import { strictEqual } from "node:assert/strict";
 *
 * const config = loadConfig({
 *   INCONTEXT_TOKENIZER_URL: "http://127.0.0.1:8000/tokenize",
 *   INCONTEXT_COMPRESSION_WINDOW_TOKENS: "64000",
 * });
 * strictEqual(config.backend, "vllm");
 * strictEqual(config.compressionWindowTokens, 64000);
 * strictEqual(config.minOutputTokens, 4096);
 * ```
 *
 * @module
 */
import { z } from "zod";
import {
  type Config,
  CONFIG_VARIABLES,
  type ConfigVariable,
  DEFAULT_CONFIG,
} from "../core/config.ts";
import { checkHttpUrl } from "../_internal/url.ts";
import { MAX_TIMEOUT_SECONDS } from "../_internal/timer_limit.ts";
import { ConfigError, type ConfigIssue } from "../core/config_error.ts";
import { backends } from "../backends/registry.ts";
import {
  OLDEST_VLLM_RELEASE,
  parseVllmVersion,
  vllmRules,
} from "@incontext/engine/vllm";
import { TOKENIZER_MODES } from "@incontext/engine/vllm";
import { chainProblems, chooseBackends, splitChain } from "./backend_choice.ts";

export { type Config, ConfigError, type ConfigIssue };
export { backends } from "../backends/registry.ts";
export {
  createBackendRegistry,
  DuplicateBackendError,
  UnknownBackendError,
} from "../core/registry.ts";
export type {
  BackendFactory,
  BackendPluginOptions,
  BackendRegistry,
} from "../core/registry.ts";
export { loadBackendModules } from "./plugins.ts";
export type { LoadBackendModulesOptions } from "./plugins.ts";
// The Backend contract's types, which the registry's API names.
export type * from "../core/contract_types.ts";

/**
 * Options for {@linkcode loadConfig}.
 *
 * @example Selecting a backend that needs no tokenizer URL
 * ```ts
 * import { createBackendRegistry, loadConfig } from "@incontext/incontext/config";
 * import { FakeBackend } from "@incontext/incontext/testing";
 * import { strictEqual } from "node:assert/strict";
 *
 * const registry = createBackendRegistry();
 * registry.plugin("acme", () => new FakeBackend({ count: 1 }));
 * strictEqual(loadConfig({ INCONTEXT_BACKEND: "acme" }, { registry }).backend, "acme");
 * ```
 */
export interface LoadConfigOptions {
  /**
   * The registry consulted for the variables the selected backend requires:
   * a `BackendRegistry`, typed by the one method used so that this entry
   * point stays self-contained.
   *
   * @default backends
   */
  readonly registry?: {
    requirements(name: string): readonly string[];
  };
}

type Key = keyof Config;
type Values = { -readonly [K in Key]-?: Exclude<Config[K], undefined> };

const DIGITS = /^\d+$/;
const DECIMAL = /^(?:\d+\.?\d*|\.\d+)$/;
const SPECIFIER = /^(?:jsr|npm|file):\S/;
// What `Headers` accepts: Latin-1 code units without NUL, CR or LF. Checked
// here so a bad value fails at startup instead of failing every count.
const HEADER_VALUE = /^[^\0\r\n\u0100-\uffff]*$/;

function integer(min: 0 | 1): z.ZodType<number, string> {
  const rule = min === 0
    ? "must be a non-negative integer"
    : "must be a positive integer";
  return z.string()
    .regex(DIGITS, { error: rule, abort: true })
    .transform(Number)
    .refine((n) => n >= min, { error: rule, abort: true })
    .refine(Number.isSafeInteger, `must be at most ${Number.MAX_SAFE_INTEGER}`);
}

function seconds(): z.ZodType<number, string> {
  const rule = "must be a finite number of seconds greater than 0";
  return z.string()
    .regex(DECIMAL, { error: rule, abort: true })
    .transform(Number)
    .refine((n) => n > 0, { error: rule, abort: true })
    .refine(
      (n) => n <= MAX_TIMEOUT_SECONDS,
      `must be at most ${MAX_TIMEOUT_SECONDS} seconds`,
    );
}

// HOST:PORT with a port in 1-65535 (0 would pick a random port nobody can find).
const listenAddress = z.string().superRefine((value, ctx) => {
  const match = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):(\d{1,5})$/.exec(value);
  const port = match ? Number(match[2]) : 0;
  if (port < 1 || port > 65535) {
    ctx.addIssue({
      code: "custom",
      message: "must be HOST:PORT with a port from 1 to 65535",
    });
  }
});

function fraction(): z.ZodType<number, string> {
  const rule =
    "must be a fraction in [0, 1) such as 0.02, or a percentage such as 2%";
  return z.string()
    .regex(/^(?:\d+\.?\d*|\.\d+)%?$/, { error: rule, abort: true })
    .transform((v) =>
      v.endsWith("%") ? Number(v.slice(0, -1)) / 100 : Number(v)
    )
    .refine((n) => n >= 0 && n < 1, rule);
}

const headerValue = z.string().regex(
  HEADER_VALUE,
  "must be a valid HTTP header value",
);

const httpUrl = z.string().superRefine((value, ctx) => {
  const rule = checkHttpUrl(value);
  if (rule !== undefined) ctx.addIssue({ code: "custom", message: rule });
});

// redis:// or rediss:// with a host, an optional port and database number.
// Only the rule is reported: the URL may carry a password.
const redisUrl = z.string().superRefine((value, ctx) => {
  const rule = checkRedisUrl(value);
  if (rule !== undefined) ctx.addIssue({ code: "custom", message: rule });
});

function checkRedisUrl(value: string): string | undefined {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return "must be a redis:// or rediss:// URL";
  }
  if (url.protocol !== "redis:" && url.protocol !== "rediss:") {
    return "must be a redis:// or rediss:// URL";
  }
  if (url.hostname === "") return "must name a host";
  if (url.search !== "" || url.hash !== "") {
    return "must not have a query or a fragment";
  }
  const db = url.pathname.replace(/^\//, "");
  if (db !== "" && !DIGITS.test(db)) {
    return "must end in a database number, such as /0";
  }
  return undefined;
}

const moduleList = z.string()
  .transform((value) => value.split(",").map((item) => item.trim()))
  .superRefine((items, ctx) => {
    items.forEach((item, index) => {
      if (item === "") {
        ctx.addIssue({
          code: "custom",
          message: `item ${index + 1} must not be empty`,
        });
      } else if (!SPECIFIER.test(item)) {
        ctx.addIssue({
          code: "custom",
          message: `item ${
            index + 1
          } must be a jsr:, npm: or file: module specifier`,
        });
      }
    });
  });

// A chain's names, written back without the spaces around them; the
// configuration splits them into the first and the rest.
const backendChain = z.string()
  .transform(splitChain)
  .superRefine((names, ctx) => {
    for (const message of chainProblems(names)) {
      ctx.addIssue({ code: "custom", message });
    }
  })
  .transform((names) => names.join(","));

/** Read from `backend`'s variable, not on their own. */
type Derived = "backendFallbacks";

// Values arrive trimmed and non-blank, so the schemas check only their own rules.
const SCHEMAS: {
  readonly [K in Exclude<Key, Derived>]: z.ZodType<Values[K], string>;
} = {
  backend: backendChain,
  backendFallbackTurns: integer(1),
  tokenizerUrl: httpUrl,
  tokenizerTimeoutSeconds: seconds(),
  tokenizerUserAgent: headerValue,
  tokenizerApiKey: headerValue,
  anthropicApiKey: headerValue,
  geminiApiKey: headerValue,
  openaiApiKey: headerValue,
  tokenizerDir: z.string(),
  chatTemplate: z.string(),
  chatTemplateContentFormat: z.enum(["auto", "string", "openai"], {
    error: "must be auto, string or openai",
  }),
  tokenizerSha256: z.string()
    .regex(/^[0-9a-fA-F]{64}$/, "must be 64 hexadecimal characters")
    .transform((value) => value.toLowerCase()),
  vllmVersion: z.string().superRefine((value, ctx) => {
    try {
      vllmRules(value);
    } catch {
      ctx.addIssue({
        code: "custom",
        message: parseVllmVersion(value) === undefined
          ? "must be a vLLM version such as 0.16.0"
          : `must be ${OLDEST_VLLM_RELEASE} or newer (the oldest release mirrored)`,
      });
    }
  }),
  vllmTokenizerMode: z.string()
    .transform((value) => value.toLowerCase())
    .refine(
      (value) => (TOKENIZER_MODES as readonly string[]).includes(value),
      `must be one of vLLM's tokenizer modes: ${TOKENIZER_MODES.join(", ")}`,
    ),
  fallbackMarginTokens: integer(0),
  compressionWindowTokens: integer(1),
  minOutputTokens: integer(1),
  contextLength: integer(1),
  model: z.string(),
  countModel: z.string(),
  hermesConfig: z.string(),
  hermesPython: z.string(),
  hermesRelease: z.enum(["2026-07", "0.19", "2026-09"], {
    error: "must be 2026-07, 0.19 or 2026-09",
  }),
  hermesModels: z.string()
    .transform((value) => value.split(",").map((item) => item.trim()))
    .refine((items) => items.every((item) => item !== ""), {
      message: "must be a comma-separated list of model names",
    })
    .transform((items) => Object.freeze(items) as readonly string[]),
  upstreamUrl: httpUrl,
  listen: listenAddress,
  onExhausted: z.enum(["clamp", "reject", "unchanged"], {
    error: "must be clamp, reject or unchanged",
  }),
  anchorEntries: integer(1),
  anchorTolerance: fraction(),
  maxRequestBytes: integer(1),
  maxHeaderBytes: integer(1).refine(
    (n) => n >= 1024,
    "must be at least 1024: a request line and a host alone can take that",
  ),
  upstreamTimeoutSeconds: seconds(),
  upstreamIdleTimeoutSeconds: seconds(),
  shutdownGraceSeconds: seconds(),
  headersTimeoutSeconds: seconds(),
  requestTimeoutSeconds: seconds(),
  keepAliveTimeoutSeconds: seconds(),
  maxConnections: integer(1),
  adminToken: headerValue,
  contextEndpoint: z.enum(["on", "off"], { error: "must be on or off" })
    .transform((value) => value === "on"),
  logLevel: z.enum(["debug", "info", "warning", "error"], {
    error: "must be debug, info, warning or error",
  }),
  logFormat: z.enum(["text", "json"], { error: "must be text or json" }),
  backendModules: moduleList,
  cacheEntries: integer(1),
  sharedStore: redisUrl,
  sharedStoreCa: z.string(),
  sharedStoreSecret: z.string().min(
    32,
    "must be at least 32 characters, such as the output of openssl rand -hex 32",
  ),
  sharedTtlSeconds: seconds(),
  sharedTimeoutMs: integer(1).refine(
    (n) => n <= 60_000,
    "must be at most 60000 milliseconds",
  ),
};

type Env = Readonly<Record<string, string | undefined>>;

interface Reading {
  /** The variable the value came from: the primary name or the legacy alias. */
  readonly variable: string;
  /** The trimmed value; `""` when blank. */
  readonly value: string;
}

/** What the environment set, before the cross-field rules. */
interface Parsed {
  readonly values: Partial<Values>;
  readonly names: Map<Key, string>;
  readonly failed: Set<Key>;
}

// A set primary name wins even when blank, so a blank INCONTEXT_* variable is
// reported rather than silently replaced by a stale legacy alias.
function read(
  env: Env,
  source: ConfigVariable,
): Reading | undefined {
  for (const variable of [source.name, source.alias]) {
    if (variable === undefined) continue;
    const raw = env[variable];
    if (raw !== undefined) return { variable, value: raw.trim() };
  }
  return undefined;
}

/** Where {@linkcode parseVariable} reads and writes. */
interface Parsing {
  readonly env: Env;
  readonly parsed: Parsed;
  readonly issues: ConfigIssue[];
}

function parseVariable<K extends Exclude<Key, Derived>>(
  key: K,
  { env, parsed, issues }: Parsing,
): void {
  const variable = CONFIG_VARIABLES[key];
  const reading = read(env, variable);
  if (reading === undefined) return;
  parsed.names.set(key, reading.variable);
  const result = reading.value === ""
    ? undefined
    : SCHEMAS[key].safeParse(reading.value);
  if (result?.success) {
    parsed.values[key] = result.data;
    return;
  }
  parsed.failed.add(key);
  // Only our own rule texts are copied: never zod's input, never the value.
  const rules = result?.error.issues.map((issue) => issue.message) ??
    ["must not be blank"];
  for (const rule of rules) issues.push({ variable: reading.variable, rule });
}

// Checks W <= C, F < W, R < W and F + R < W. A rule is skipped when one of
// its inputs was already reported as invalid, or when a simpler rule on the
// same variable already failed, so each issue asks for a separate fix.
/** A secret with no store to use it on is a deployment that trusts what it should not. */
function checkSharedSecret(parsed: Parsed, issues: ConfigIssue[]): void {
  const { values, failed } = parsed;
  if (
    values.sharedStoreSecret !== undefined &&
    values.sharedStore === undefined && !failed.has("sharedStore")
  ) {
    issues.push({
      variable: parsed.names.get("sharedStoreSecret") ??
        CONFIG_VARIABLES.sharedStoreSecret.name,
      rule:
        `is set without ${CONFIG_VARIABLES.sharedStore.name}: set both, or neither`,
    });
  }
}

function checkWindow(parsed: Parsed, issues: ConfigIssue[]): void {
  const { failed, values } = parsed;
  const window = values.compressionWindowTokens;
  if (window === undefined) return;
  const nameOf = (key: Key) =>
    parsed.names.get(key) ?? CONFIG_VARIABLES[key].name;
  const report = (key: Key, rule: string) => {
    // A default can break a rule too; say so, or the user hunts for a variable they never set.
    const unset = parsed.names.has(key)
      ? ""
      : " (it is unset, so its default applies)";
    issues.push({ variable: nameOf(key), rule: rule + unset });
  };
  const below = `must be less than ${nameOf("compressionWindowTokens")}`;
  const context = values.contextLength;
  if (context !== undefined && window > context) {
    report(
      "compressionWindowTokens",
      `must not exceed ${nameOf("contextLength")}`,
    );
  }
  const margin = values.fallbackMarginTokens ??
    DEFAULT_CONFIG.fallbackMarginTokens;
  const output = values.minOutputTokens ?? DEFAULT_CONFIG.minOutputTokens;
  const marginValid = !failed.has("fallbackMarginTokens");
  const outputValid = !failed.has("minOutputTokens");
  if (marginValid && margin >= window) report("fallbackMarginTokens", below);
  if (!outputValid) return;
  if (output >= window) report("minOutputTokens", below);
  else if (marginValid && margin + output >= window) {
    report(
      "minOutputTokens",
      `plus ${nameOf("fallbackMarginTokens")} ${below}`,
    );
  }
}

// An unknown backend is not an error here: plugin modules register after the
// configuration loads, and `backends.load()` reports unknown names.
function checkRequirements(
  env: Env,
  issues: ConfigIssue[],
  { backend, registry }: {
    readonly backend: string;
    readonly registry: NonNullable<LoadConfigOptions["registry"]>;
  },
): void {
  for (const required of registry.requirements(backend)) {
    const known = Object.values(CONFIG_VARIABLES).find((v: ConfigVariable) =>
      v.name === required || v.alias === required
    );
    const reading = read(env, known ?? { name: required });
    if (reading === undefined) {
      issues.push({
        variable: required,
        rule: `is required by the '${backend}' backend`,
      });
    } else if (known === undefined && reading.value === "") {
      // Known variables already reported their blank value.
      issues.push({ variable: reading.variable, rule: "must not be blank" });
    }
  }
}

/**
 * Reads and validates the configuration from environment variables. Each
 * `INCONTEXT_*` variable wins over its legacy alias; values are trimmed and a
 * blank value is an error; unset variables take their defaults.
 *
 * @param env The environment as an object, such as `Deno.env.toObject()` or `process.env`.
 * @param options The registry that says which variables the selected backend requires.
 * @returns The validated, frozen configuration.
 * @throws {ConfigError} When any variable is invalid or missing: one error lists
 * every issue, naming the variable actually read and the broken rule, never a value.
 *
 * @example Reporting every bad variable at once
 * ```ts
 * import { ConfigError, loadConfig } from "@incontext/incontext/config";
 * import { deepStrictEqual, ok, throws } from "node:assert/strict";
 *
 * throws(
 *   () => loadConfig({ INCONTEXT_TOKENIZER_URL: "ftp://example.com", INCONTEXT_CACHE_ENTRIES: "0" }),
 *   (error: unknown) => {
 *     ok(error instanceof ConfigError);
 *     deepStrictEqual(error.issues.map((issue) => issue.variable), [
 *       "INCONTEXT_TOKENIZER_URL",
 *       "INCONTEXT_CACHE_ENTRIES",
 *     ]);
 *     return true;
 *   },
 * );
 * ```
 */
export function loadConfig(
  env: Record<string, string | undefined>,
  options: LoadConfigOptions = {},
): Config {
  const { registry = backends } = options;
  const parsed: Parsed = { values: {}, names: new Map(), failed: new Set() };
  const issues: ConfigIssue[] = [];
  const parsing: Parsing = { env, parsed, issues };
  for (const key of Object.keys(SCHEMAS) as Exclude<Key, Derived>[]) {
    parseVariable(key, parsing);
  }
  checkWindow(parsed, issues);
  checkSharedSecret(parsed, issues);
  const chain = parsed.failed.has("backend") ? undefined : backendsOf(parsed);
  if (chain !== undefined) {
    for (const backend of chain) {
      checkRequirements(env, issues, { backend, registry });
    }
    checkFallbackTurns(parsed, chain, issues);
  }
  if (issues.length > 0) throw new ConfigError(issues);
  const { backendModules = DEFAULT_CONFIG.backendModules, ...values } =
    parsed.values;
  const [backend = DEFAULT_CONFIG.backend, ...fallbacks] = chain ?? [];
  return Object.freeze({
    ...DEFAULT_CONFIG,
    ...values,
    backend,
    ...(fallbacks.length === 0
      ? {}
      : { backendFallbacks: Object.freeze(fallbacks) }),
    backendModules: Object.freeze(backendModules),
  });
}

// A setting that is set counts, valid or not: a bad value is reported as
// bad rather than as missing.
function backendsOf(parsed: Parsed): readonly string[] {
  const named = parsed.values.backend;
  return chooseBackends({
    ...(named === undefined ? {} : { named: splitChain(named) }),
    folder: parsed.names.has("tokenizerDir"),
    url: parsed.names.has("tokenizerUrl"),
  }).names;
}

/** Turns on a later backend need a chain to have one. */
function checkFallbackTurns(
  parsed: Parsed,
  chain: readonly string[],
  issues: ConfigIssue[],
): void {
  const variable = parsed.names.get("backendFallbackTurns");
  if (
    variable === undefined || parsed.failed.has("backendFallbackTurns") ||
    chain.length > 1
  ) return;
  issues.push({
    variable,
    rule:
      `is set but ${CONFIG_VARIABLES.backend.name} names one backend: the turns are counted on the next backend of a chain such as local,vllm`,
  });
}
