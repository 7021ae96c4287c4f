/**
 * The types the HTTP bridges' options name (budget()'s options and result,
 * the Backend contract), re-exported by each bridge entry so that it stands
 * on its own.
 *
 * @module
 */
export type {
  BridgeOptions,
  DecisionRequest,
  ExhaustedPolicy,
} from "./options.ts";
export type * from "../core/contract_types.ts";
export type {
  BudgetOptions,
  BudgetResult,
  BudgetRoute,
  BudgetTarget,
} from "../core/budget.ts";
export type { Estimator } from "../core/estimate.ts";
