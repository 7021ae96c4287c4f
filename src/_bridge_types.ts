/**
 * The types the HTTP bridges' options name (budget()'s options and result,
 * the Backend contract), re-exported by each bridge entry so that it stands
 * on its own.
 *
 * @module
 */
export type { BridgeOptions, ExhaustedPolicy } from "./bridge_options.ts";
export type * from "./_contract_types.ts";
export type {
  BudgetOptions,
  BudgetResult,
  BudgetRoute,
  BudgetTarget,
} from "./budget.ts";
export type { Estimator } from "./estimate.ts";
