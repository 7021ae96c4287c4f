/**
 * Reading and checking the Hermes `config.yaml` keys that decide the
 * compression window. Every rule names the key path and never a value: a
 * Hermes config can hold API keys next to the keys read here.
 *
 * @module
 */
import { CORE_SCHEMA, loadAll, YAMLException } from "js-yaml";
import { errorType } from "../../core/error_type.ts";
import { ConfigError, type ConfigIssue } from "../../core/config_error.ts";

/**
 * What incontext reads from a Hermes `config.yaml`: a plain, frozen object.
 * Unset keys are absent; only `compression.enabled` and
 * `compression.threshold` have defaults, Hermes' own.
 *
 * @example Building settings without a file
 * ```ts
 * import { type HermesSettings, hermesWindow } from "@incontext/incontext/hermes";
 * import { strictEqual } from "node:assert/strict";
 *
 * const settings: HermesSettings = {
 *   model: { contextLength: 131072 },
 *   compression: { enabled: true, threshold: 0.5 },
 * };
 * strictEqual(hermesWindow(settings, { release: "2026-07" }), 98304);
 * ```
 */
export interface HermesSettings {
  /** The `model` section. */
  readonly model: {
    /** `model.default` (or a bare `model: NAME`): the model Hermes uses. */
    readonly default?: string;
    /** `model.provider`, e.g. `custom` for a local OpenAI-compatible server. */
    readonly provider?: string;
    /** `model.base_url`: where Hermes sends requests, e.g. the incontext proxy. */
    readonly baseUrl?: string;
    /** `model.context_length`: the served context length, in tokens. */
    readonly contextLength?: number;
    /** `model.max_tokens`: the output reservation Hermes subtracts from the context. */
    readonly maxTokens?: number;
  };
  /** The `compression` section. */
  readonly compression: {
    /**
     * `compression.enabled`: whether Hermes compresses at all.
     *
     * @default true
     */
    readonly enabled: boolean;
    /**
     * `compression.threshold`: the fraction of the context at which Hermes
     * compresses, greater than 0 and at most 1.
     *
     * @default 0.5
     */
    readonly threshold: number;
    /** `compression.threshold_tokens`: an absolute cap on W, in tokens. */
    readonly thresholdTokens?: number;
    /**
     * `compression.model_thresholds`: thresholds by model-name substring; the
     * longest key contained in the model name replaces `threshold`.
     */
    readonly modelThresholds?: Readonly<Record<string, number>>;
  };
}

/** The variable that names the Hermes file, used in every issue. */
export const HERMES_VARIABLE = "INCONTEXT_HERMES_CONFIG";

/** The `ConfigIssue.variable` for a key of the Hermes file. */
export function at(path: string): string {
  return `${HERMES_VARIABLE} (${path})`;
}

type Raw = Readonly<Record<string, unknown>>;
type Mutable<T> = { -readonly [K in keyof T]: T[K] };
type ModelSettings = Mutable<HermesSettings["model"]>;
type CompressionSettings = Mutable<HermesSettings["compression"]>;

interface Rule<T> {
  readonly test: (value: unknown) => value is T;
  readonly rule: string;
}

/** A positive safe integer: YAML `131072.0` passes, as Python's `int()` takes it. */
export const POSITIVE_INTEGER: Rule<number> = {
  test: (v): v is number =>
    typeof v === "number" && Number.isSafeInteger(v) && v > 0,
  rule: "must be a positive integer",
};
const FRACTION: Rule<number> = {
  test: (v): v is number => typeof v === "number" && v > 0 && v <= 1,
  rule: "must be a number greater than 0 and at most 1",
};
const TEXT: Rule<string> = {
  test: (v): v is string => typeof v === "string",
  rule: "must be a string",
};
const BOOLEAN: Rule<boolean> = {
  test: (v): v is boolean => typeof v === "boolean",
  rule: "must be true or false",
};

function isMapping(value: unknown): value is Raw {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function own(section: Raw, key: string): unknown {
  return Object.hasOwn(section, key) ? section[key] : undefined;
}

/**
 * Whether `value` is set and passes `rule`; a broken rule is recorded. YAML
 * `null` (an empty value) counts as unset, as it does for Hermes.
 */
function check<T>(
  value: unknown,
  path: string,
  rule: Rule<T>,
  issues: ConfigIssue[],
): value is T {
  if (value === undefined || value === null) return false;
  if (rule.test(value)) return true;
  issues.push({ variable: at(path), rule: rule.rule });
  return false;
}

/** The last part of a key path: `context_length` of `model.context_length`. */
function keyOf(path: string): string {
  return path.slice(path.lastIndexOf(".") + 1);
}

/** Sets `target[name]` from the key at `path` when it is set and valid. */
function copy<T, K extends string>(
  target: { [P in K]?: T },
  name: K,
  section: Raw,
  path: string,
  rule: Rule<T>,
  issues: ConfigIssue[],
): void {
  const value = own(section, keyOf(path));
  if (check(value, path, rule, issues)) target[name] = value;
}

// Hermes treats an empty string like an unset key (`value or ""`).
function copyText<K extends string>(
  target: { [P in K]?: string },
  name: K,
  section: Raw,
  path: string,
  issues: ConfigIssue[],
): void {
  const value = own(section, keyOf(path));
  if (!check(value, path, TEXT, issues)) return;
  if (value.trim() !== "") target[name] = value.trim();
}

function readModel(raw: unknown, issues: ConfigIssue[]): ModelSettings {
  const model: ModelSettings = {};
  // Hermes still accepts the older `model: NAME` form.
  if (typeof raw === "string") {
    if (raw.trim() !== "") model.default = raw.trim();
    return model;
  }
  if (raw === undefined || raw === null) return model;
  if (!isMapping(raw)) {
    issues.push({
      variable: at("model"),
      rule: "must be a mapping or a model name",
    });
    return model;
  }
  copyText(model, "default", raw, "model.default", issues);
  copyText(model, "provider", raw, "model.provider", issues);
  copyText(model, "baseUrl", raw, "model.base_url", issues);
  const integer = POSITIVE_INTEGER;
  copy(model, "contextLength", raw, "model.context_length", integer, issues);
  copy(model, "maxTokens", raw, "model.max_tokens", integer, issues);
  return model;
}

/** The `model_thresholds` mapping, frozen; `undefined` when unset or invalid. */
function readThresholds(
  raw: unknown,
  issues: ConfigIssue[],
): Readonly<Record<string, number>> | undefined {
  const path = "compression.model_thresholds";
  if (raw === undefined || raw === null) return undefined;
  if (!isMapping(raw)) {
    issues.push({ variable: at(path), rule: "must be a mapping" });
    return undefined;
  }
  const entries = Object.entries(raw);
  // A single issue for any bad entry: naming its key would echo file content.
  if (!entries.every(([, value]) => FRACTION.test(value))) {
    issues.push({ variable: at(path), rule: `each value ${FRACTION.rule}` });
    return undefined;
  }
  // fromEntries defines own properties, so even a `__proto__` key stays data.
  return Object.freeze(Object.fromEntries(entries) as Record<string, number>);
}

function readCompression(
  raw: unknown,
  issues: ConfigIssue[],
): CompressionSettings {
  const compression: CompressionSettings = { enabled: true, threshold: 0.5 };
  if (raw === undefined || raw === null) return compression;
  if (!isMapping(raw)) {
    issues.push({ variable: at("compression"), rule: "must be a mapping" });
    return compression;
  }
  const path = "compression";
  copy(compression, "enabled", raw, `${path}.enabled`, BOOLEAN, issues);
  copy(compression, "threshold", raw, `${path}.threshold`, FRACTION, issues);
  copy(
    compression,
    "thresholdTokens",
    raw,
    `${path}.threshold_tokens`,
    POSITIVE_INTEGER,
    issues,
  );
  const thresholds = readThresholds(own(raw, "model_thresholds"), issues);
  if (thresholds !== undefined) compression.modelThresholds = thresholds;
  return compression;
}

/** The error's code (`ENOENT`) when it has one, else its type name. */
export function errorCode(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" && /^[A-Z][A-Z0-9_]*$/.test(code)
    ? code
    : errorType(error);
}

// YAMLException messages quote the offending lines, and a Hermes config can
// hold API keys: only the error type and position leave this function, and
// the exception is not chained as the cause.
function parseYaml(text: string): unknown {
  let documents: unknown[];
  try {
    documents = loadAll(text, { schema: CORE_SCHEMA });
  } catch (error) {
    const where = error instanceof YAMLException && error.mark !== undefined
      ? ` at line ${error.mark.line + 1}, column ${error.mark.column + 1}`
      : "";
    throw new ConfigError([{
      variable: HERMES_VARIABLE,
      rule: `must be valid YAML (${errorType(error)}${where})`,
    }]);
  }
  if (documents.length > 1) {
    throw new ConfigError([{
      variable: HERMES_VARIABLE,
      rule: "must hold a single YAML document",
    }]);
  }
  return documents[0];
}

/** Parses and checks the YAML text; see `parseHermesSettings()`. */
export function readSettings(text: string): HermesSettings {
  const root = parseYaml(text);
  const issues: ConfigIssue[] = [];
  if (root !== undefined && root !== null && !isMapping(root)) {
    issues.push({
      variable: HERMES_VARIABLE,
      rule: "must hold a YAML mapping at the top level",
    });
  }
  const top: Raw = isMapping(root) ? root : {};
  const model = readModel(own(top, "model"), issues);
  const compression = readCompression(own(top, "compression"), issues);
  if (issues.length > 0) throw new ConfigError(issues);
  return Object.freeze({
    model: Object.freeze(model),
    compression: Object.freeze(compression),
  });
}

/**
 * The rules `readSettings()` applies, checked again on settings that may
 * have been built by hand.
 */
export function settingsIssues(settings: HermesSettings): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  const { model, compression } = settings;
  check(model.contextLength, "model.context_length", POSITIVE_INTEGER, issues);
  check(model.maxTokens, "model.max_tokens", POSITIVE_INTEGER, issues);
  check(compression.threshold, "compression.threshold", FRACTION, issues);
  check(
    compression.thresholdTokens,
    "compression.threshold_tokens",
    POSITIVE_INTEGER,
    issues,
  );
  readThresholds(compression.modelThresholds, issues);
  return issues;
}
