/**
 * `loadConfig()`: every setting read from the environment by its record,
 * then the rules that relate settings (the budget's arithmetic, a secret
 * without its store, a chain's turns, each selected backend's requirements),
 * all reported at once.
 *
 * @module
 */
import { ConfigError, type ConfigIssue } from "../core/config_error.ts";
import { backends } from "../backends/registry.ts";
import { chooseBackends, splitChain } from "./backend_choice.ts";
import {
  type Config,
  DEFAULT_CONFIG,
  type SettingKey,
  SETTINGS,
} from "./settings.ts";
import {
  type Env,
  read,
  type ReadSettings,
  readSettings,
} from "./read_settings.ts";
import type { Setting } from "../_internal/setting.ts";

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

/** What the environment set. */
type Read = ReadSettings<typeof SETTINGS>;

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
  const issues: ConfigIssue[] = [];
  const parsed = readSettings(SETTINGS, env, issues);
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

/** The variable a setting was read from, else its own. */
function nameOf(parsed: Read, key: SettingKey): string {
  return parsed.names.get(key) ?? SETTINGS[key].variable;
}

/** A secret with no store to use it on is a deployment that trusts what it should not. */
function checkSharedSecret(parsed: Read, issues: ConfigIssue[]): void {
  const { values, failed } = parsed;
  if (
    values.sharedStoreSecret !== undefined &&
    values.sharedStore === undefined && !failed.has("sharedStore")
  ) {
    issues.push({
      variable: nameOf(parsed, "sharedStoreSecret"),
      rule:
        `is set without ${SETTINGS.sharedStore.variable}: set both, or neither`,
    });
  }
}

// Checks W <= C, F < W, R < W and F + R < W. A rule is skipped when one of
// its inputs was already reported as invalid, or when a simpler rule on the
// same variable already failed, so each issue asks for a separate fix.
function checkWindow(parsed: Read, issues: ConfigIssue[]): void {
  const { failed, values } = parsed;
  const window = values.compressionWindowTokens;
  if (window === undefined) return;
  const report = (key: SettingKey, rule: string) => {
    // A default can break a rule too; say so, or the user hunts for a variable they never set.
    const unset = parsed.names.has(key)
      ? ""
      : " (it is unset, so its default applies)";
    issues.push({ variable: nameOf(parsed, key), rule: rule + unset });
  };
  const below = `must be less than ${
    nameOf(parsed, "compressionWindowTokens")
  }`;
  const context = values.contextLength;
  if (context !== undefined && window > context) {
    report(
      "compressionWindowTokens",
      `must not exceed ${nameOf(parsed, "contextLength")}`,
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
      `plus ${nameOf(parsed, "fallbackMarginTokens")} ${below}`,
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
    const known = Object.values<Setting<unknown>>(SETTINGS).find((record) =>
      record.variable === required || record.alias === required
    );
    const reading = read(env, known ?? { variable: required });
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

// A setting that is set counts, valid or not: a bad value is reported as
// bad rather than as missing.
function backendsOf(parsed: Read): readonly string[] {
  const named = parsed.values.backend;
  return chooseBackends({
    ...(named === undefined ? {} : { named: splitChain(named) }),
    folder: parsed.names.has("tokenizerDir"),
    url: parsed.names.has("tokenizerUrl"),
  }).names;
}

/** Turns on a later backend need a chain to have one. */
function checkFallbackTurns(
  parsed: Read,
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
      `is set but ${SETTINGS.backend.variable} names one backend: the turns are counted on the next backend of a chain such as local,vllm`,
  });
}
