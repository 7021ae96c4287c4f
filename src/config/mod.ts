/**
 * Typed configuration from environment variables: {@linkcode loadConfig}
 * reads `INCONTEXT_*` variables (and the original plugin's legacy aliases),
 * applies the defaults and checks every rule at once, so a bad environment
 * fails at startup with one {@linkcode ConfigError} that lists every problem.
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
import { DEFAULT_CONFIG } from "../core/config.ts";
import { checkHttpUrl } from "../_internal/url.ts";
import { ConfigError, type ConfigIssue } from "../core/config_error.ts";
import { backends } from "../core/registry.ts";

export { ConfigError, type ConfigIssue };

/**
 * The validated configuration: a plain, immutable object. Each property names
 * its variable and, where one exists, the original plugin's legacy alias.
 *
 * @example Deriving a configuration for a test
 * ```ts
 * import { type Config, loadConfig } from "@incontext/incontext/config";
 * import { strictEqual } from "node:assert/strict";
 *
 * const base = loadConfig({ INCONTEXT_TOKENIZER_URL: "http://127.0.0.1:8000/tokenize" });
 * const config: Config = { ...base, model: "Qwen/Qwen3-8B" };
 * strictEqual(config.model, "Qwen/Qwen3-8B");
 * strictEqual(config.cacheEntries, 4096);
 * ```
 */
export interface Config {
  /**
   * `INCONTEXT_BACKEND` (legacy `HERMES_DYNAMIC_BUDGET_BACKEND`): the backend name.
   *
   * @default "vllm"
   */
  readonly backend: string;
  /** `INCONTEXT_TOKENIZER_URL` (legacy `HERMES_VLLM_TOKENIZER_URL`): an http(s) URL; `vllm` requires it. */
  readonly tokenizerUrl?: string;
  /**
   * `INCONTEXT_TOKENIZER_TIMEOUT_SECONDS` (legacy `HERMES_VLLM_TOKENIZER_TIMEOUT_SECONDS`).
   *
   * @default 30
   */
  readonly tokenizerTimeoutSeconds: number;
  /**
   * `INCONTEXT_TOKENIZER_USER_AGENT` (legacy `HERMES_VLLM_TOKENIZER_USER_AGENT`).
   *
   * @default "incontext/VERSION"
   */
  readonly tokenizerUserAgent: string;
  /** `INCONTEXT_TOKENIZER_API_KEY`: a secret, never echoed in errors or logs. */
  readonly tokenizerApiKey?: string;
  /** `INCONTEXT_ANTHROPIC_API_KEY`: sent as `x-api-key` by the `anthropic` backend only; a secret. */
  readonly anthropicApiKey?: string;
  /** `INCONTEXT_GEMINI_API_KEY`: sent as `x-goog-api-key` by the `gemini` backend only; a secret. */
  readonly geminiApiKey?: string;
  /** `INCONTEXT_OPENAI_API_KEY`: sent as a bearer token by the `openai` backend only; a secret. */
  readonly openaiApiKey?: string;
  /**
   * `INCONTEXT_TOKENIZER_DIR`: the Hugging Face model folder the vLLM server
   * serves; `local` requires it.
   */
  readonly tokenizerDir?: string;
  /**
   * `INCONTEXT_CHAT_TEMPLATE`: a chat template overriding the folder's (as
   * vLLM's `--chat-template`): a file path, or the template text itself when
   * it contains `{%` or `{{`.
   */
  readonly chatTemplate?: string;
  /** `INCONTEXT_TOKENIZER_SHA256`: the expected SHA-256 of `tokenizer.json`, 64 hex characters. */
  readonly tokenizerSha256?: string;
  /**
   * `INCONTEXT_FALLBACK_MARGIN_TOKENS` (legacy `HERMES_DYNAMIC_BUDGET_FALLBACK_MARGIN_TOKENS`):
   * subtracted when only an estimate is available.
   *
   * @default 1024
   */
  readonly fallbackMarginTokens: number;
  /**
   * `INCONTEXT_COMPRESSION_WINDOW_TOKENS` (legacy `HERMES_DYNAMIC_BUDGET_COMPRESSION_WINDOW_TOKENS`):
   * the window W; unset means the host supplies it.
   */
  readonly compressionWindowTokens?: number;
  /**
   * `INCONTEXT_MIN_OUTPUT_TOKENS` (legacy `HERMES_DYNAMIC_BUDGET_MIN_OUTPUT_TOKENS`): the
   * smallest output worth sending a request for.
   *
   * @default 4096
   */
  readonly minOutputTokens: number;
  /** `INCONTEXT_CONTEXT_LENGTH`: the served context length, in tokens. */
  readonly contextLength?: number;
  /** `INCONTEXT_MODEL`: the only model whose requests are budgeted. */
  readonly model?: string;
  /**
   * `INCONTEXT_HERMES_CONFIG`: the path of a Hermes `config.yaml` whose
   * compression settings give the window W when
   * `INCONTEXT_COMPRESSION_WINDOW_TOKENS` is unset (see the `./hermes` entry).
   * Only the path is checked here; the file is read by `loadHermesSettings()`.
   */
  readonly hermesConfig?: string;
  /**
   * `INCONTEXT_BACKEND_MODULES`: comma-separated `jsr:`, `npm:` or `file:`
   * modules that register backends.
   *
   * @default []
   */
  readonly backendModules: readonly string[];
  /**
   * `INCONTEXT_CACHE_ENTRIES`: how many exact counts the cache keeps.
   *
   * @default 4096
   */
  readonly cacheEntries: number;
  /** `INCONTEXT_UPSTREAM_URL`: the proxy's upstream server root, an http(s) URL. */
  readonly upstreamUrl?: string;
  /**
   * `INCONTEXT_LISTEN`: where the proxy listens, `HOST:PORT` (`[::1]:PORT` for IPv6).
   *
   * @default "127.0.0.1:8787"
   */
  readonly listen: string;
  /**
   * `INCONTEXT_ON_EXHAUSTED`: what the proxy does when less than the minimum
   * output is left: `clamp`, `reject` or `unchanged`.
   *
   * @default "clamp"
   */
  readonly onExhausted: "clamp" | "reject" | "unchanged";
  /**
   * `INCONTEXT_ANCHOR_ENTRIES`: how many conversations' usage anchors the proxy keeps.
   *
   * @default 4096
   */
  readonly anchorEntries: number;
  /**
   * `INCONTEXT_ANCHOR_TOLERANCE`: the fraction (`0.02`) or percentage (`2%`)
   * by which an exact count may differ from the usage anchor before it is
   * logged and counted.
   *
   * @default 0.02
   */
  readonly anchorTolerance: number;
  /**
   * `INCONTEXT_MAX_REQUEST_BYTES`: request bodies above this size get a 413.
   *
   * @default 33554432 (32 MiB)
   */
  readonly maxRequestBytes: number;
  /**
   * `INCONTEXT_UPSTREAM_TIMEOUT_SECONDS`: how long the upstream may take to
   * send its response headers before the proxy answers 504. A non-streamed
   * generation sends them only once it is complete, so this bounds the
   * longest non-streamed generation.
   *
   * @default 600
   */
  readonly upstreamTimeoutSeconds: number;
  /**
   * `INCONTEXT_UPSTREAM_IDLE_TIMEOUT_SECONDS`: how long a response body may
   * wait for the upstream's next bytes before the proxy ends the stream.
   *
   * @default 600
   */
  readonly upstreamIdleTimeoutSeconds: number;
  /**
   * `INCONTEXT_SHUTDOWN_GRACE_SECONDS`: how long the proxy server lets
   * requests in flight finish after SIGTERM or SIGINT before it ends them.
   *
   * @default 30
   */
  readonly shutdownGraceSeconds: number;
}

/**
 * Options for {@linkcode loadConfig}.
 *
 * @example Selecting a backend that needs no tokenizer URL
 * ```ts
 * import { createBackendRegistry } from "@incontext/incontext";
 * import { loadConfig } from "@incontext/incontext/config";
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

/** Where a value comes from: the primary name, then the legacy alias. */
interface Source {
  readonly name: string;
  readonly alias?: string;
}

interface Variable<K extends Key> extends Source {
  readonly schema: z.ZodType<Values[K], string>;
}

const DIGITS = /^\d+$/;
const DECIMAL = /^(?:\d+\.?\d*|\.\d+)$/;
const SPECIFIER = /^(?:jsr|npm|file):\S/;
// What `Headers` accepts: Latin-1 code units without NUL, CR or LF. Checked
// here so a bad value fails at startup instead of failing every count.
const HEADER_VALUE = /^[^\0\r\n\u0100-\uffff]*$/;
// Timers (and `AbortSignal.timeout` on Node) cannot wait longer than 2^31 - 1
// ms; beyond it Node fires at once, so every count would time out.
const MAX_TIMEOUT_SECONDS = 2_147_483;

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

// Values arrive trimmed and non-blank, so the schemas check only their own rules.
const VARIABLES: { readonly [K in Key]: Variable<K> } = {
  backend: {
    name: "INCONTEXT_BACKEND",
    alias: "HERMES_DYNAMIC_BUDGET_BACKEND",
    schema: z.string(),
  },
  tokenizerUrl: {
    name: "INCONTEXT_TOKENIZER_URL",
    alias: "HERMES_VLLM_TOKENIZER_URL",
    schema: httpUrl,
  },
  tokenizerTimeoutSeconds: {
    name: "INCONTEXT_TOKENIZER_TIMEOUT_SECONDS",
    alias: "HERMES_VLLM_TOKENIZER_TIMEOUT_SECONDS",
    schema: seconds(),
  },
  tokenizerUserAgent: {
    name: "INCONTEXT_TOKENIZER_USER_AGENT",
    alias: "HERMES_VLLM_TOKENIZER_USER_AGENT",
    schema: headerValue,
  },
  tokenizerApiKey: { name: "INCONTEXT_TOKENIZER_API_KEY", schema: headerValue },
  anthropicApiKey: { name: "INCONTEXT_ANTHROPIC_API_KEY", schema: headerValue },
  geminiApiKey: { name: "INCONTEXT_GEMINI_API_KEY", schema: headerValue },
  openaiApiKey: { name: "INCONTEXT_OPENAI_API_KEY", schema: headerValue },
  tokenizerDir: { name: "INCONTEXT_TOKENIZER_DIR", schema: z.string() },
  chatTemplate: { name: "INCONTEXT_CHAT_TEMPLATE", schema: z.string() },
  tokenizerSha256: {
    name: "INCONTEXT_TOKENIZER_SHA256",
    schema: z.string()
      .regex(/^[0-9a-fA-F]{64}$/, "must be 64 hexadecimal characters")
      .transform((value) => value.toLowerCase()),
  },
  fallbackMarginTokens: {
    name: "INCONTEXT_FALLBACK_MARGIN_TOKENS",
    alias: "HERMES_DYNAMIC_BUDGET_FALLBACK_MARGIN_TOKENS",
    schema: integer(0),
  },
  compressionWindowTokens: {
    name: "INCONTEXT_COMPRESSION_WINDOW_TOKENS",
    alias: "HERMES_DYNAMIC_BUDGET_COMPRESSION_WINDOW_TOKENS",
    schema: integer(1),
  },
  minOutputTokens: {
    name: "INCONTEXT_MIN_OUTPUT_TOKENS",
    alias: "HERMES_DYNAMIC_BUDGET_MIN_OUTPUT_TOKENS",
    schema: integer(1),
  },
  contextLength: { name: "INCONTEXT_CONTEXT_LENGTH", schema: integer(1) },
  model: { name: "INCONTEXT_MODEL", schema: z.string() },
  hermesConfig: { name: "INCONTEXT_HERMES_CONFIG", schema: z.string() },
  upstreamUrl: { name: "INCONTEXT_UPSTREAM_URL", schema: httpUrl },
  listen: { name: "INCONTEXT_LISTEN", schema: listenAddress },
  onExhausted: {
    name: "INCONTEXT_ON_EXHAUSTED",
    schema: z.enum(["clamp", "reject", "unchanged"], {
      error: "must be clamp, reject or unchanged",
    }),
  },
  anchorEntries: { name: "INCONTEXT_ANCHOR_ENTRIES", schema: integer(1) },
  anchorTolerance: { name: "INCONTEXT_ANCHOR_TOLERANCE", schema: fraction() },
  maxRequestBytes: { name: "INCONTEXT_MAX_REQUEST_BYTES", schema: integer(1) },
  upstreamTimeoutSeconds: {
    name: "INCONTEXT_UPSTREAM_TIMEOUT_SECONDS",
    schema: seconds(),
  },
  upstreamIdleTimeoutSeconds: {
    name: "INCONTEXT_UPSTREAM_IDLE_TIMEOUT_SECONDS",
    schema: seconds(),
  },
  shutdownGraceSeconds: {
    name: "INCONTEXT_SHUTDOWN_GRACE_SECONDS",
    schema: seconds(),
  },
  backendModules: { name: "INCONTEXT_BACKEND_MODULES", schema: moduleList },
  cacheEntries: { name: "INCONTEXT_CACHE_ENTRIES", schema: integer(1) },
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
  source: Source,
): Reading | undefined {
  for (const variable of [source.name, source.alias]) {
    if (variable === undefined) continue;
    const raw = env[variable];
    if (raw !== undefined) return { variable, value: raw.trim() };
  }
  return undefined;
}

function parseVariable<K extends Key>(
  key: K,
  env: Env,
  parsed: Parsed,
  issues: ConfigIssue[],
): void {
  const variable: Variable<K> = VARIABLES[key];
  const reading = read(env, variable);
  if (reading === undefined) return;
  parsed.names.set(key, reading.variable);
  const result = reading.value === ""
    ? undefined
    : variable.schema.safeParse(reading.value);
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
function checkWindow(parsed: Parsed, issues: ConfigIssue[]): void {
  const { failed, values } = parsed;
  const window = values.compressionWindowTokens;
  if (window === undefined) return;
  const nameOf = (key: Key) => parsed.names.get(key) ?? VARIABLES[key].name;
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
// configuration loads, and `backends.one()` reports unknown names.
function checkRequirements(
  env: Env,
  backend: string,
  registry: NonNullable<LoadConfigOptions["registry"]>,
  issues: ConfigIssue[],
): void {
  for (const required of registry.requirements(backend)) {
    const known = Object.values(VARIABLES).find((v) =>
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
  for (const key of Object.keys(VARIABLES) as Key[]) {
    parseVariable(key, env, parsed, issues);
  }
  checkWindow(parsed, issues);
  if (!parsed.failed.has("backend")) {
    checkRequirements(
      env,
      parsed.values.backend ?? DEFAULT_CONFIG.backend,
      registry,
      issues,
    );
  }
  if (issues.length > 0) throw new ConfigError(issues);
  const { backendModules = DEFAULT_CONFIG.backendModules, ...values } =
    parsed.values;
  return Object.freeze({
    ...DEFAULT_CONFIG,
    ...values,
    backendModules: Object.freeze(backendModules),
  });
}
