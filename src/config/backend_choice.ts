/**
 * Which backends count: the chain `INCONTEXT_BACKEND` names, else what the
 * tokenizer settings imply. Apart from `loadConfig()` so that `incontext
 * check` says why with the very rule that chose.
 *
 * @module
 */
import type { SettingsOf } from "../_internal/setting.ts";
import { integer, map } from "../_internal/setting_parsers.ts";

/** Why a configuration counts with its backends: named, or which tokenizer settings are set. */
export type BackendReason =
  | "named"
  | "folder and url"
  | "folder"
  | "url"
  | "default";

/** What the choice reads: which settings are set, not their values. */
export interface BackendSettings {
  /** The names `INCONTEXT_BACKEND` gives, when it is set. */
  readonly named?: readonly string[];
  /** Whether `INCONTEXT_TOKENIZER_DIR` is set. */
  readonly folder: boolean;
  /** Whether `INCONTEXT_TOKENIZER_URL` is set. */
  readonly url: boolean;
}

/** The backends that count, first first, and why: the folder, with `/tokenize` behind when given. */
export function chooseBackends(
  settings: BackendSettings,
): { readonly names: readonly string[]; readonly reason: BackendReason } {
  const { named, folder, url } = settings;
  if (named !== undefined) return { names: named, reason: "named" };
  if (folder && url) {
    return { names: ["local", "vllm"], reason: "folder and url" };
  }
  if (folder) return { names: ["local"], reason: "folder" };
  return { names: ["vllm"], reason: url ? "url" : "default" };
}

/** The backends of a loaded configuration, first first. */
export function backendNames(config: {
  readonly backend: string;
  readonly backendFallbacks?: readonly string[];
}): readonly string[] {
  return [config.backend, ...(config.backendFallbacks ?? [])];
}

/** `INCONTEXT_BACKEND`'s text as the names it gives. */
export function splitChain(text: string): string[] {
  return text.split(",").map((item) => item.trim());
}

/**
 * What is wrong with a chain's names, one rule each: an empty item, a name
 * given twice, and `anchored` beside others (its counts come from the very
 * usage a chain is checked against, so it could never be found wrong).
 */
export function chainProblems(names: readonly string[]): string[] {
  const problems: string[] = [];
  names.forEach((name, index) => {
    if (name === "") problems.push(`item ${index + 1} must not be empty`);
    else if (names.indexOf(name) !== index) {
      problems.push(
        `item ${index + 1} must not repeat item ${names.indexOf(name) + 1}`,
      );
    }
  });
  if (names.length > 1 && names.includes("anchored")) {
    problems.push(
      "must not chain 'anchored': its counts come from the usage a chain checks counts against",
    );
  }
  return problems;
}

/** The chain's settings, by the property each one sets. */
export const CHAIN_SETTINGS: SettingsOf<Omit<ChainConfig, "backendFallbacks">> =
  {
    // The names written back without the spaces around them; the
    // configuration splits them into the first and the rest.
    backend: {
      variable: "INCONTEXT_BACKEND",
      alias: "HERMES_DYNAMIC_BUDGET_BACKEND",
      flag: "--backend NAME",
      default: "vllm",
      doc:
        "the backend's name or a plugin's, or a chain such as `local,vllm`; unset, chosen from the tokenizer settings",
      parse: map(
        (value) => {
          const names = splitChain(value);
          const rules = chainProblems(names);
          return rules.length === 0 ? { value: names, rules } : { rules };
        },
        (names) => names.join(","),
      ),
    },
    backendFallbackTurns: {
      variable: "INCONTEXT_BACKEND_FALLBACK_TURNS",
      shownDefault: "none (until restart)",
      doc:
        "verified counts a model makes on a chain's later backend, then the first again",
      parse: integer(1),
    },
  };

/**
 * The chain's part of the configuration: its first backend, the rest, and
 * how long a model stays on a later one.
 */
export type ChainConfig = {
  readonly backend: string;
  readonly backendFallbackTurns?: number;
  /**
   * `INCONTEXT_BACKEND`'s names after the first, in order: the backends a
   * model moves on to when a response's usage contradicts a count. Absent
   * for a single backend.
   */
  readonly backendFallbacks?: readonly string[];
};
