/**
 * Options shared by the HTTP bridges: `budgetedFetch()`, `budgetMiddleware()`
 * and the proxy.
 *
 * @module
 */
import type { RequestKind } from "../core/backend.ts";
import type { BudgetOptions, BudgetResult } from "../core/budget.ts";

/**
 * What a bridge does when less than the minimum output is left below the
 * window: `"clamp"` sends min(caller's cap, R, the context length minus the
 * prompt), so that a reply never fills the room the host's compression
 * request needs next, `"reject"` answers 400 `context_length_exceeded`
 * so the host compresses and retries, `"unchanged"` forwards the request as
 * it is.
 */
export type ExhaustedPolicy = "clamp" | "reject" | "unchanged";

/**
 * Options shared by the HTTP bridges: budget()'s, less what the endpoint
 * decides (the request kind, the default cap field and the abort signal,
 * which comes from the HTTP request).
 */
export interface BridgeOptions
  extends Omit<BudgetOptions, "kind" | "signal" | "defaultField"> {
  /**
   * What to do when less than `minOutputTokens` is left below the window.
   *
   * @default "clamp"
   */
  readonly onExhausted?: ExhaustedPolicy;
  /**
   * Called with every budget decision, for logging or metrics. Errors it
   * throws are ignored.
   */
  readonly onDecision?: (result: BudgetResult, kind: RequestKind) => void;
}
