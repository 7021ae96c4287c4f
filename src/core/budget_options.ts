/**
 * What budget() takes and what it answers.
 *
 * @module
 */
import type {
  Backend,
  CapField,
  CountResult,
  JsonObject,
  RequestKind,
} from "./backend.ts";
import type { Estimator } from "./estimate.ts";
import type { BudgetRoute, BudgetTarget } from "./route.ts";

/** Options for {@linkcode budget}. */
export interface BudgetOptions {
  /** The compression window W: the prompt size at which the host compresses. */
  readonly window: number;
  /** The served context length, at least W. */
  readonly contextLength: number;
  /** Counts the prompt exactly. */
  readonly backend: Backend;
  /**
   * F: tokens kept free on top of a rough estimate when the exact count fails.
   *
   * @default 1024
   */
  readonly fallbackMarginTokens?: number;
  /**
   * R: the smallest output worth asking for; below it the host must compress.
   *
   * @default 4096
   */
  readonly minOutputTokens?: number;
  /**
   * The rough estimator used when the exact count fails.
   *
   * @default roughEstimate
   */
  readonly estimate?: Estimator;
  /**
   * The field to write when the caller gave no cap (mapped through the
   * backend's `outputBudgetField`).
   *
   * @default "max_output_tokens" for Responses requests, else "max_tokens"
   */
  readonly defaultField?: CapField;
  /**
   * The request's shape. Bridges that know the endpoint pass it; a request
   * whose shape does not match is left unchanged.
   *
   * @default detected from the shape: `messages` chat, `prompt` completion, `input` Responses
   */
  readonly kind?: RequestKind;
  /** The one route this budget applies to; other requests pass untouched. */
  readonly route?: BudgetRoute;
  /**
   * The routes this budget applies to, in place of `route`: a request is
   * budgeted on the first route it matches, against that route's `window`;
   * requests matching none pass untouched.
   */
  readonly routes?: readonly BudgetRoute[];
  /** Where this request is going, when the host knows. */
  readonly target?: BudgetTarget;
  /** Aborts the exact count; the rough estimate is used instead. */
  readonly signal?: AbortSignal;
  /**
   * A count from usage anchors, used when the exact count fails and before
   * the rough estimate, and in place of a backend's count that is all
   * estimate when it estimates less (source `"usage-anchor"`): the last response's `usage`
   * for the conversation this request extends, plus an estimate of what was
   * appended since. Return that estimate as `estimatedTokens` of a
   * `CountResult`: the margin min(F, estimatedTokens) covers it, as an
   * estimate can be low. A plain number is all anchored (no margin). Return
   * `undefined` without one.
   */
  readonly anchor?: (request: JsonObject) => number | CountResult | undefined;
}

/** What {@linkcode budget} decided. */
export interface BudgetResult {
  /**
   * `"set"`: `request` carries the budget; `"compress"`: less than the
   * minimum is left, the host must compress (request unchanged);
   * `"unchanged"`: not budgeted (other route, unsupported shape, or every
   * count failed).
   */
  readonly action: "set" | "compress" | "unchanged";
  /** A rewritten copy for "set", else the caller's own object. */
  readonly request: JsonObject;
  /** The backend's source label, `"usage-anchor"`, `"rough-fallback"`, or `"none"`. */
  readonly source: string;
  /** A one-line explanation without prompt text. */
  readonly reason: string;
  /** The prompt tokens counted (or estimated). */
  readonly promptTokens?: number;
  /**
   * "set" and "compress": how many of `promptTokens` are estimated, from 0
   * (an exact count) to `promptTokens` (a rough estimate).
   */
  readonly estimatedTokens?: number;
  /** The cap written ("set") or that would be allowed ("compress"). */
  readonly maxTokens?: number;
  /** The wire field written ("set") or to write ("compress"). */
  readonly field?: string;
  /** "compress": the smallest output worth sending, min(R, caller's cap). */
  readonly requiredTokens?: number;
  /** "set" and "compress": the compression window W the request was budgeted against. */
  readonly window?: number;
  /**
   * "compress": min(caller's cap, R, context length - P (- F for an
   * estimate), backend limit), which can be below 1. When it reaches
   * `requiredTokens`, the context still holds the smallest reply worth
   * sending, and a bridge that clamps sends that; below it, the request
   * cannot be served, and a bridge answers the overflow itself. R bounds it
   * so that a reply never fills the room the host's compression request
   * needs next.
   */
  readonly hardLimitTokens?: number;
}
