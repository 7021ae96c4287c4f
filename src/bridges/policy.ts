/**
 * What a bridge does with budget()'s answer under its `onExhausted` policy:
 * send the budget, clamp to the smallest reply worth sending, send the
 * request as it came, or answer the overflow. One rule for every bridge.
 *
 * @module
 */
import type { BudgetResult } from "../core/budget.ts";
import type { ExhaustedPolicy } from "./options.ts";

/** The cap to send, the request as it came, or the overflow answer. */
export type PolicyOutcome =
  | { readonly send: "cap"; readonly maxTokens: number }
  | { readonly send: "as-is" }
  | { readonly send: "overflow" };

/**
 * Never a tiny cap: a "set" result sends its budget; a "compress" result
 * sends min(caller's cap, R) under `clamp` while the context still holds it
 * after the prompt, and is the overflow otherwise (and always under
 * `reject`); `unchanged` and unbudgeted results go as they came.
 */
export function applyPolicy(
  result: BudgetResult,
  policy: ExhaustedPolicy = "clamp",
): PolicyOutcome {
  if (result.action === "set" && result.maxTokens !== undefined) {
    return { send: "cap", maxTokens: result.maxTokens };
  }
  if (result.action !== "compress" || policy === "unchanged") {
    return { send: "as-is" };
  }
  const { hardLimitTokens: hard, requiredTokens: required } = result;
  if (
    policy === "clamp" && hard !== undefined && required !== undefined &&
    hard >= required
  ) {
    return { send: "cap", maxTokens: required };
  }
  return { send: "overflow" };
}
