/**
 * `ConfigError`: every broken setting at once, named by its variable, never
 * its value.
 *
 * @module
 */

/** One broken configuration rule: the variable and the rule, never the value. */
export interface ConfigIssue {
  /** The environment variable, e.g. `INCONTEXT_TOKENIZER_URL`. */
  readonly variable: string;
  /** The rule it broke, e.g. `must be a positive integer`. */
  readonly rule: string;
}

/**
 * The configuration is invalid. Lists every bad variable with the rule it
 * broke; values are never echoed, so secrets stay out of logs.
 *
 * @example Reading the issues
 * ```ts
 * import { ConfigError } from "@incontext/incontext/config";
 * import { strictEqual } from "node:assert/strict";
 *
 * const error = new ConfigError([{ variable: "INCONTEXT_MODEL", rule: "must not be blank" }]);
 * strictEqual(error.issues.length, 1);
 * strictEqual(error.message, "Invalid incontext configuration: INCONTEXT_MODEL must not be blank");
 * ```
 */
export class ConfigError extends Error {
  /** Every broken rule. */
  readonly issues: readonly ConfigIssue[];
  /**
   * Creates the error.
   *
   * @param issues Every broken rule, at least one.
   * @param options The underlying cause, if any.
   */
  constructor(issues: readonly ConfigIssue[], options?: ErrorOptions) {
    super(
      `Invalid incontext configuration: ${
        issues.map((i) => `${i.variable} ${i.rule}`).join("; ")
      }`,
      options,
    );
    this.name = "ConfigError";
    this.issues = issues;
  }
}
