/**
 * The proxy options a Hermes config gives: its routes, each with its own
 * window, and, when the installed Hermes was asked, the live window that
 * follows `config.yaml` as it changes. Logs where the window came from at
 * start-up and each change (counts, model names and versions only). The
 * options are spelled in the proxy's shape: the proxy is a layer above.
 *
 * @module
 */
import { getLogger } from "@logtape/logtape";
import type { HermesConfig } from "./config.ts";
import type { BudgetRoute } from "../../core/route.ts";
import {
  answerWarnings,
  type HermesBudget,
  type HermesWarning,
  liveRoutes,
} from "./budget.ts";

const logger = getLogger(["incontext", "hermes"]);

function describe(budget: HermesBudget): string {
  const routes = budget.routes?.map((route) => route.model) ?? [];
  return routes.length === 0
    ? "every model (Hermes names no model.default)"
    : routes.map((name) => JSON.stringify(name.slice(0, 100))).join(", ");
}

function warn(warnings: readonly HermesWarning[]): void {
  for (const { message, properties } of warnings) {
    logger.warn(message, { ...properties });
  }
}

/** What the proxy's `live` option answers. */
export interface HermesLiveBudget {
  readonly window: number;
  readonly routes?: readonly BudgetRoute[];
}

/** The proxy options (`routes`, `live`) a Hermes config gives. */
export interface HermesProxyOptions {
  readonly routes?: readonly BudgetRoute[];
  readonly live?: () => HermesLiveBudget;
}

/** The options to add to the proxy's for a Hermes config, logging the start-up window. */
export function hermesLive(
  budget: HermesBudget,
  config: HermesConfig,
): HermesProxyOptions {
  logger.info(
    "hermes window={window} context_length={contextLength} from {source}; budgeting {models}",
    {
      window: budget.window,
      contextLength: budget.contextLength ?? "unknown",
      source: budget.source,
      models: describe(budget),
    },
  );
  const { watch } = budget;
  if (watch !== undefined) warn(answerWarnings(watch.current()));
  const routes = budget.routes === undefined ? {} : { routes: budget.routes };
  if (watch === undefined) return routes;
  // The live answer alone decides the routes: a route dropped from the
  // config must not survive in the options.
  let shown = watch.current();
  let live = { window: shown.window, ...routes };
  return {
    live() {
      const answer = watch.current();
      if (answer !== shown) {
        shown = answer;
        const routes = liveRoutes(answer, config);
        live = { window: answer.window, ...(routes ? { routes } : {}) };
        logger.info(
          "hermes config changed: window={window} context_length={contextLength} (Hermes {version})",
          {
            window: answer.window,
            contextLength: answer.contextLength,
            version: answer.hermesVersion,
          },
        );
        warn(answerWarnings(answer));
      }
      return live;
    },
  };
}
