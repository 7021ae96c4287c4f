/**
 * Exact by proof: a budgeted request's exact count set beside the prompt
 * tokens its response's `usage` reports. Equal, the count is verified; a
 * difference is counted by model, told to the backend, so that a backend
 * chain moves the model on, and logged with both numbers: a warning for the
 * first of each cause (the count's label, high or low) and at most one a
 * minute after it, whatever the models clients name. Only exact counts are checked: an estimate (a rough estimate,
 * a usage anchor, a count with an estimated part) says nothing of the
 * backend, and a response without usage (a refusal, an error, a stream
 * without `stream_options.include_usage`) checks nothing. Kept apart from
 * the handler so that the request path only asks for a checker.
 *
 * @module
 */
import { getLogger } from "@logtape/logtape";
import type { Backend } from "../core/backend.ts";
import type { BudgetResult } from "../core/budget.ts";
import { ANCHOR, ROUGH } from "../core/prompt_count.ts";
import { effectiveField, modelLabel } from "../core/request.ts";
import { errorType } from "../core/error_type.ts";
import type { Usage } from "../anchors/usage.ts";
import { Counter } from "../_internal/metrics.ts";
import { LogLimit, type LogLimitOptions } from "../_internal/log_limit.ts";

const logger = getLogger(["incontext", "proxy"]);

/**
 * The most models tallied apart: client-chosen names must not grow the
 * metrics without bound; further models share the tally `other`.
 */
export const MAX_VERIFIED_MODELS = 64;

/** How one model's exact counts fared against the server's usage. */
export interface ModelVerification {
  /** The model, as `GET /incontext/context` names it. */
  readonly model: string;
  /** Exact counts whose response reported usage. */
  readonly checked: number;
  /** Those the usage confirmed. */
  readonly equal: number;
  /** `equal / checked`. */
  readonly rate: number;
  /** The label of the last count checked: the backend that counts the model now. */
  readonly source: string;
  /** The last difference, with both numbers, or null. */
  readonly lastDiffer: {
    readonly source: string;
    readonly counted: number;
    readonly served: number;
  } | null;
}

/** One model's tally. */
interface Tally {
  checked: number;
  equal: number;
  source: string;
  lastDiffer: ModelVerification["lastDiffer"];
}

const HELP =
  "Exact prompt counts checked against the usage.prompt_tokens of their response, by model and result: equal or differ.";

/** The tallies of one proxy, by model, in the order each was first checked. */
export class CountVerification {
  readonly #models = new Map<string, Tally>();
  /** The models past {@linkcode MAX_VERIFIED_MODELS}, together. */
  #other: Tally | undefined;
  /** The warnings of each cause: the count's label, high or low. */
  readonly #warnings: LogLimit;

  /** Creates empty tallies; `options` time the warnings. */
  constructor(options: LogLimitOptions = {}) {
    this.#warnings = new LogLimit(options);
  }

  /**
   * What checks a decision's count against its response's usage, or
   * `undefined` when the count is no exact one.
   */
  checkerFor(
    result: BudgetResult,
    backend: Backend,
  ): ((usage: Usage) => void) | undefined {
    const { promptTokens, estimatedTokens, source } = result;
    if (
      promptTokens === undefined || estimatedTokens !== 0 ||
      source === ROUGH || source === ANCHOR
    ) return undefined;
    return (usage) => this.#check(result, promptTokens, usage, backend);
  }

  /** Checked and equal counts over every model. */
  totals(): { readonly checked: number; readonly equal: number } {
    let checked = 0;
    let equal = 0;
    for (const [, tally] of this.#tallies()) {
      checked += tally.checked;
      equal += tally.equal;
    }
    return { checked, equal };
  }

  /**
   * Each model's tally, in the order of their first check.
   *
   * @param name How a model is shown: its name, or a label in its place.
   */
  view(name: (model: string) => string): ModelVerification[] {
    return this.#tallies().map(([model, tally]) => ({
      model: tally === this.#other ? model : name(model),
      checked: tally.checked,
      equal: tally.equal,
      rate: tally.equal / tally.checked,
      source: tally.source,
      lastDiffer: tally.lastDiffer,
    }));
  }

  /**
   * The `incontext_count_verifications_total` family: the models by name,
   * or as `model 1`, `model 2`... in the order of their first check.
   */
  metricLines(names: boolean): string[] {
    const counter = new Counter("incontext_count_verifications_total", HELP);
    let n = 0;
    for (const [model, tally] of this.#tallies()) {
      const label = tally === this.#other || names ? model : `model ${++n}`;
      counter.inc({ model: label, result: "equal" }, tally.equal);
      counter.inc(
        { model: label, result: "differ" },
        tally.checked - tally.equal,
      );
    }
    return counter.render();
  }

  #tallies(): [string, Tally][] {
    const tallies = [...this.#models];
    if (this.#other !== undefined) tallies.push(["other", this.#other]);
    return tallies;
  }

  #check(
    result: BudgetResult,
    counted: number,
    usage: Usage,
    backend: Backend,
  ): void {
    const served = usage.promptTokens;
    const { source } = result;
    const model = modelLabel(result.request);
    const tally = this.#tally(model);
    tally.checked += 1;
    tally.source = source;
    if (counted === served) tally.equal += 1;
    else {
      tally.lastDiffer = { source, counted, served };
      this.#warn(model, { source, counted, served });
    }
    const name = effectiveField(result.request, "model");
    try {
      backend.countChecked({
        model: typeof name === "string" ? name : undefined,
        source,
        counted,
        served,
      });
    } catch (error) {
      // The backend's bookkeeping; the response goes on regardless.
      logger.warn("the backend's countChecked threw ({errorType})", {
        errorType: errorType(error),
      });
    }
  }

  #tally(model: string): Tally {
    const known = this.#models.get(model);
    if (known !== undefined) return known;
    const fresh = { checked: 0, equal: 0, source: "", lastDiffer: null };
    if (this.#models.size < MAX_VERIFIED_MODELS) {
      this.#models.set(model, fresh);
      return fresh;
    }
    return this.#other ??= fresh;
  }

  #warn(
    model: string,
    { source, counted, served }: NonNullable<ModelVerification["lastDiffer"]>,
  ): void {
    // The model is the client's choice: it is named, never part of the cause.
    this.#warnings.log(logger, {
      cause: `${source}\n${counted > served ? "high" : "low"}`,
      level: "warn",
      message:
        "count differs from the server's usage: model={model} source={source} counted={counted} usage={usage}",
      first:
        "every difference is counted in incontext_count_verifications_total, and those of this source in this direction are warned of once a minute at most",
      later:
        "{held} more of this source in this direction since the last warning, in incontext_count_verifications_total",
      properties: { model, source, counted, usage: served },
    });
  }
}
