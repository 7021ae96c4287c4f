/**
 * The budget's settings: the window W, the context length C, the fallback
 * margin F and the minimum output R, as the environment gives them.
 *
 * @module
 */
import type { SettingsOf } from "../_internal/setting.ts";
import { integer } from "../_internal/setting_parsers.ts";

/**
 * The budget's part of the configuration: W, R, F and C, each set by the
 * record of {@linkcode BUDGET_SETTINGS} of the same name.
 */
export type BudgetConfig = {
  readonly compressionWindowTokens?: number;
  readonly minOutputTokens: number;
  readonly fallbackMarginTokens: number;
  readonly contextLength?: number;
};

/** The budget's settings, by the property each one sets. */
export const BUDGET_SETTINGS: SettingsOf<BudgetConfig> = {
  compressionWindowTokens: {
    variable: "INCONTEXT_COMPRESSION_WINDOW_TOKENS",
    alias: "HERMES_DYNAMIC_BUDGET_COMPRESSION_WINDOW_TOKENS",
    flag: "--window N",
    shownDefault: "none (from host)",
    doc: "W, the compression window: an integer > 0, at most C",
    parse: integer(1),
  },
  minOutputTokens: {
    variable: "INCONTEXT_MIN_OUTPUT_TOKENS",
    alias: "HERMES_DYNAMIC_BUDGET_MIN_OUTPUT_TOKENS",
    default: 4096,
    doc: "R, the smallest output worth sending a request for; F + R < W",
    parse: integer(1),
  },
  fallbackMarginTokens: {
    variable: "INCONTEXT_FALLBACK_MARGIN_TOKENS",
    alias: "HERMES_DYNAMIC_BUDGET_FALLBACK_MARGIN_TOKENS",
    default: 1024,
    doc: "F, kept free when only an estimate is available: an integer >= 0",
    parse: integer(0),
  },
  contextLength: {
    variable: "INCONTEXT_CONTEXT_LENGTH",
    flag: "--context-length N",
    doc: "C, the served context length in tokens (vLLM `--max-model-len`)",
    parse: integer(1),
  },
};
