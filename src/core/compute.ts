/**
 * The budget arithmetic, without counting: what is left below the window,
 * and the pressure a host's compressor compares with the window.
 *
 * @module
 */

/** Options for {@linkcode computeMaxTokens}. */
export interface ComputeMaxTokensOptions {
  /**
   * Tokens kept free on top of the prompt, for counts that are only estimates.
   *
   * @default 0
   */
  readonly safetyMargin?: number;
  /**
   * The smallest output budget worth sending; less returns `null`.
   *
   * @default 1
   */
  readonly minimumOutputTokens?: number;
}

/**
 * Computes the output budget left below a compression window:
 * `window - promptTokens - safetyMargin`, or `null` when that is below the
 * minimum.
 *
 * @param window The compression window W, a positive integer.
 * @param promptTokens The prompt tokens P, a non-negative integer.
 * @param options The safety margin and the minimum output.
 * @returns The budget, or `null` when less than the minimum is left.
 * @throws {RangeError} When W <= 0, P < 0, the margin is negative or the minimum is not positive (or any is not an integer).
 *
 * @example The original plugin's examples
 * ```ts
 * import { computeMaxTokens } from "@incontext/incontext";
 * import { strictEqual } from "node:assert/strict";
 *
 * strictEqual(computeMaxTokens(64000, 1000), 63000);
 * strictEqual(computeMaxTokens(64000, 1000, { safetyMargin: 1024 }), 61976);
 * strictEqual(computeMaxTokens(64000, 0), 64000);
 * strictEqual(computeMaxTokens(64000, 64000), null);
 * ```
 */
export function computeMaxTokens(
  window: number,
  promptTokens: number,
  options: ComputeMaxTokensOptions = {},
): number | null {
  const { safetyMargin = 0, minimumOutputTokens = 1 } = options;
  const what = "compute the output budget";
  requireInteger(window, { what, name: "window", min: 1 });
  requireInteger(promptTokens, { what, name: "promptTokens", min: 0 });
  requireInteger(safetyMargin, { what, name: "safetyMargin", min: 0 });
  requireInteger(minimumOutputTokens, {
    what,
    name: "minimumOutputTokens",
    min: 1,
  });
  const remaining = window - promptTokens - safetyMargin;
  return remaining >= minimumOutputTokens ? remaining : null;
}

/**
 * The compression pressure `P + R - 1`: a host's pre-request compressor
 * compares it with the window W and so compresses exactly when `W - P < R`,
 * before it builds a request that cannot fit.
 *
 * @param promptTokens The prompt tokens P, a non-negative integer.
 * @param minOutputTokens The minimum useful output R, a positive integer.
 * @returns P + R - 1.
 * @throws {RangeError} When P < 0 or R <= 0 (or either is not an integer).
 *
 * @example Compress exactly when less than R is left
 * ```ts
 * import { compressionPressure } from "@incontext/incontext";
 * import { strictEqual } from "node:assert/strict";
 *
 * const window = 55705;
 * strictEqual(compressionPressure(51609, 4096) >= window, false); // 4096 left: fits
 * strictEqual(compressionPressure(51610, 4096) >= window, true); // 4095 left: compress
 * ```
 */
export function compressionPressure(
  promptTokens: number,
  minOutputTokens: number,
): number {
  const what = "compute the compression pressure";
  requireInteger(promptTokens, { what, name: "promptTokens", min: 0 });
  requireInteger(minOutputTokens, { what, name: "minOutputTokens", min: 1 });
  return promptTokens + minOutputTokens - 1;
}

/** What {@linkcode requireInteger} checks, and how its error names the value. */
export interface IntegerRule {
  /** The operation, as in "Cannot compute the budget". */
  readonly what: string;
  /** The option's name. */
  readonly name: string;
  /** The smallest valid value. */
  readonly min: number;
}

/** Throws a std-style RangeError unless `value` is a safe integer >= `min`. */
export function requireInteger(
  value: unknown,
  rule: IntegerRule,
): asserts value is number {
  const { what, name, min } = rule;
  if (
    typeof value !== "number" || !Number.isSafeInteger(value) || value < min
  ) {
    const rule = min === 1
      ? "a positive integer"
      : min === 0
      ? "a non-negative integer"
      : `an integer >= ${min}`;
    throw new RangeError(
      `Cannot ${what} as '${name}' must be ${rule}: current value is ${
        String(value)
      }`,
    );
  }
}
