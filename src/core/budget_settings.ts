/**
 * The checks of budget()'s numeric options, shared by every bridge that
 * builds budgets with them: they fail at construction, never per request.
 *
 * @module
 */
import type { BudgetOptions } from "./budget_options.ts";
import { requireInteger } from "./compute.ts";

/** Validated numeric options of {@linkcode budget}. */
export interface Settings {
  readonly window: number;
  readonly contextLength: number;
  readonly fallbackMarginTokens: number;
  readonly minOutputTokens: number;
}

/** Checks budget()'s options and fills the defaults; throws RangeError/TypeError. */
export function validateBudgetOptions(options: BudgetOptions): Settings {
  const {
    window,
    contextLength,
    fallbackMarginTokens = 1024,
    minOutputTokens = 4096,
  } = options;
  const what = "compute the budget";
  requireInteger(window, { what, name: "window", min: 1 });
  requireInteger(contextLength, { what, name: "contextLength", min: 1 });
  requireInteger(fallbackMarginTokens, {
    what,
    name: "fallbackMarginTokens",
    min: 0,
  });
  requireInteger(minOutputTokens, { what, name: "minOutputTokens", min: 1 });
  const rules: [boolean, string, number][] = [
    [
      window <= contextLength,
      "'window' must not exceed 'contextLength'",
      window,
    ],
    [
      fallbackMarginTokens < window,
      "'fallbackMarginTokens' must be below 'window'",
      fallbackMarginTokens,
    ],
    [
      minOutputTokens < window,
      "'minOutputTokens' must be below 'window'",
      minOutputTokens,
    ],
    [
      fallbackMarginTokens + minOutputTokens < window,
      "'fallbackMarginTokens' + 'minOutputTokens' must be below 'window'",
      fallbackMarginTokens + minOutputTokens,
    ],
  ];
  for (const [holds, rule, value] of rules) {
    if (!holds) {
      throw new RangeError(
        `Cannot compute the budget as ${rule}: current value is ${value}`,
      );
    }
  }
  if (!(options.backend && typeof options.backend.count === "function")) {
    throw new TypeError(
      "Cannot compute the budget as 'backend' must be a Backend",
    );
  }
  return { window, contextLength, fallbackMarginTokens, minOutputTokens };
}
