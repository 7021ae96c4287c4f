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
 * window. With required = min(caller's cap, R): `"clamp"` sends `required`
 * while the context length still holds it after the prompt, so that a reply
 * never fills the room the host's compression request needs next;
 * `"reject"` answers 400 `context_length_exceeded` so the host compresses
 * and retries; `"unchanged"` forwards the request as it is. Once the
 * context no longer holds `required`, `"clamp"` answers as `"reject"` does:
 * never a cap below `required`.
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
   * Called with every budget decision, for logging or metrics, with the
   * kind of the endpoint and the request it was made for. Errors it throws
   * are ignored.
   */
  readonly onDecision?: (
    result: BudgetResult,
    kind: RequestKind,
    request: DecisionRequest,
  ) => void;
}

/** The request a decision was made for, as `onDecision` sees it. */
export interface DecisionRequest {
  /**
   * The request's id: the caller's `x-request-id` when it is a short run of
   * visible ASCII, else a new UUID. The proxy answers with it in
   * `x-request-id`; `budgetedFetch` with `decisionHeaders`, in
   * `x-incontext-request-id`.
   */
  readonly id: string;
  /** The URL the request was sent to. */
  readonly url: string;
  /**
   * The request's headers: a host can mark a call of its own (a summary
   * call) with a header and tell its decision apart.
   */
  readonly headers: Headers;
}
