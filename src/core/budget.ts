/**
 * The budget function: the output cap still free below the compression
 * window, counted exactly, with a rough fallback and a fail-open end.
 *
 * @module
 */
import { getLogger } from "@logtape/logtape";
import type {
  Backend,
  CapField,
  CapReading,
  CountResult,
  JsonObject,
  RequestKind,
} from "./backend.ts";
import { requestShape } from "./kind.ts";
import { type Estimator, roughEstimate } from "./estimate.ts";
import { minDefined } from "./caps.ts";
import { requireInteger } from "./compute.ts";
import { errorType } from "./error_type.ts";
import { TemplateRejectedError } from "./errors.ts";
import { effectiveField, isJsonObject } from "./request.ts";
import { type BudgetRoute, type BudgetTarget, routeMismatch } from "./route.ts";

export type { BudgetRoute, BudgetTarget } from "./route.ts";

const logger = getLogger(["incontext", "budget"]);

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
  /** Where this request is going, when the host knows. */
  readonly target?: BudgetTarget;
  /** Aborts the exact count; the rough estimate is used instead. */
  readonly signal?: AbortSignal;
  /**
   * A count from usage anchors, used when the exact count fails and before
   * the rough estimate (source `"usage-anchor"`, no margin): the last
   * response's `usage` for the conversation this request extends, plus an
   * estimate of what was appended since. Return `undefined` without one.
   */
  readonly anchor?: (request: JsonObject) => number | undefined;
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
  /** The cap written ("set") or that would be allowed ("compress"). */
  readonly maxTokens?: number;
  /** The wire field written ("set") or to write ("compress"). */
  readonly field?: string;
  /** "compress": the smallest output worth sending, min(R, caller's cap). */
  readonly requiredTokens?: number;
  /**
   * "compress": the largest cap the server itself accepts, min(caller's cap,
   * context length - P (- F for an estimate), backend limit). A bridge that
   * clamps instead of compressing writes this; it can be below 1.
   */
  readonly hardLimitTokens?: number;
}

/**
 * Gives a request exactly the output budget still free below the
 * compression window: `max_tokens = min(caller's cap, W - P)`, with P
 * counted by the backend. When less than `minOutputTokens` would be left it
 * answers "compress" and leaves the request alone; when the exact count
 * fails it uses a rough estimate minus a margin; when that fails too it
 * leaves the request unchanged. It never mutates the caller's request.
 *
 * @param request The request body (chat completions shape).
 * @param options The window, context length, backend and tuning.
 * @returns The decision and the request to send.
 * @throws {RangeError} Only for invalid options, never for request content or backend failures.
 *
 * @example Budgeting against a fake backend
 * ```ts
 * import { budget } from "@incontext/incontext";
 * import { FakeBackend } from "@incontext/incontext/testing";
 * import { strictEqual } from "node:assert/strict";
 *
 * const request = { model: "m", max_tokens: 65536, messages: [{ role: "user", content: "hi" }] };
 * const result = await budget(request, {
 *   window: 55705,
 *   contextLength: 65536,
 *   backend: new FakeBackend({ count: 1705 }),
 * });
 * strictEqual(result.action, "set");
 * strictEqual(result.request.max_tokens, 54000);
 * strictEqual(request.max_tokens, 65536); // the caller's object is untouched
 * ```
 */
export async function budget(
  request: JsonObject,
  options: BudgetOptions,
): Promise<BudgetResult> {
  const settings = validateBudgetOptions(options);
  const { backend } = options;
  const source = readSource(backend);
  let shape;
  try {
    shape = requestShape(
      request,
      options.kind,
      (body) => backend.requestKind(body),
    );
  } catch (error) {
    return hookFailed(request, source, error);
  }
  if ("problem" in shape) {
    return unchanged(request, source, `unsupported request: ${shape.problem}`);
  }
  const { kind } = shape;
  const outside = options.route &&
    routeMismatch(request, options.route, options.target);
  if (outside) {
    return unchanged(
      request,
      source,
      `outside the budgeted route (${outside})`,
    );
  }
  let cap: CapReading;
  try {
    const defaultField = options.defaultField ??
      (kind === "responses" ? "max_output_tokens" : "max_tokens");
    cap = readCaps(backend, request, kind, defaultField);
  } catch (error) {
    return hookFailed(request, source, error);
  }
  const counted = await countPrompt(request, { ...options, kind }, source);
  if (counted === null) {
    return unchanged(
      request,
      source,
      "the chat template rejects this request, so the server would too",
    );
  }
  if (counted === undefined) {
    return unchanged(
      request,
      "none",
      "exact count and rough estimate both failed",
    );
  }
  let limit;
  try {
    // After the count: some servers' limits depend on the prompt (SGLang:
    // prompt + max_tokens <= context - 1; llama.cpp: n_ctx - prompt).
    limit = backend.outputBudgetLimit(request, {
      contextLength: settings.contextLength,
      kind,
      promptTokens: counted.tokens,
    });
    if (limit !== undefined && !Number.isSafeInteger(limit)) {
      throw new TypeError("outputBudgetLimit returned a non-integer");
    }
  } catch (error) {
    return hookFailed(request, source, error);
  }
  const { window, fallbackMarginTokens, minOutputTokens } = settings;
  // The margin covers only what was estimated: all of a rough estimate,
  // the appended part of an anchored count, nothing of an exact one.
  const margin = counted.source === ROUGH
    ? fallbackMarginTokens
    : Math.min(fallbackMarginTokens, counted.estimated);
  const remaining = window - counted.tokens - margin;
  const required = minDefined(minOutputTokens, cap.value) ?? minOutputTokens;
  const maxTokens = minDefined(remaining, cap.value, limit) ?? remaining;
  const detail =
    `compression_window=${window}, prompt_tokens=${counted.tokens}, max_tokens=${maxTokens}`;
  const { field } = cap;
  if (maxTokens < required) {
    logger.warn(
      "action=requires_compression model={model} source={source} window={window} prompt_tokens={promptTokens} required={required}",
      {
        model: modelLabel(request),
        source: counted.source,
        window,
        promptTokens: counted.tokens,
        required,
      },
    );
    const hard = settings.contextLength - counted.tokens - margin;
    return {
      action: "compress",
      request,
      source: counted.source,
      reason:
        `${counted.source}: ${detail} is below the required ${required}: compress first`,
      promptTokens: counted.tokens,
      maxTokens,
      field,
      requiredTokens: required,
      hardLimitTokens: minDefined(hard, cap.value, limit) ?? hard,
    };
  }
  let written: JsonObject;
  try {
    written = backend.writeCap(request, field, maxTokens);
    if (!isJsonObject(written)) {
      throw new TypeError("writeCap returned a non-object");
    }
  } catch (error) {
    return hookFailed(request, source, error);
  }
  logger.debug(
    "action=set model={model} source={source} window={window} prompt_tokens={promptTokens} max_tokens={maxTokens}",
    {
      model: modelLabel(request),
      source: counted.source,
      window,
      promptTokens: counted.tokens,
      maxTokens,
    },
  );
  return {
    action: "set",
    request: written,
    source: counted.source,
    reason: `${counted.source}: ${detail}`,
    promptTokens: counted.tokens,
    maxTokens,
    field,
  };
}

const ROUGH = "rough-fallback";
const ANCHOR = "usage-anchor";

/** The anchor's count when it has a valid one; an anchor that throws has none. */
function anchorCount(
  request: JsonObject,
  options: BudgetOptions,
): number | undefined {
  try {
    const tokens = options.anchor?.(request);
    return Number.isSafeInteger(tokens) && tokens! >= 0 ? tokens : undefined;
  } catch {
    return undefined;
  }
}

/** Validated numeric options of {@linkcode budget}. */
export interface Settings {
  readonly window: number;
  readonly contextLength: number;
  readonly fallbackMarginTokens: number;
  readonly minOutputTokens: number;
}

/** Checks budget()'s options and fills the defaults; throws RangeError/TypeError. */
export function validateBudgetOptions(options: BudgetOptions): Settings {
  const {
    window,
    contextLength,
    fallbackMarginTokens = 1024,
    minOutputTokens = 4096,
  } = options;
  const what = "compute the budget";
  requireInteger(what, "window", window, 1);
  requireInteger(what, "contextLength", contextLength, 1);
  requireInteger(what, "fallbackMarginTokens", fallbackMarginTokens, 0);
  requireInteger(what, "minOutputTokens", minOutputTokens, 1);
  const rules: [boolean, string, number][] = [
    [
      window <= contextLength,
      "'window' must not exceed 'contextLength'",
      window,
    ],
    [
      fallbackMarginTokens < window,
      "'fallbackMarginTokens' must be below 'window'",
      fallbackMarginTokens,
    ],
    [
      minOutputTokens < window,
      "'minOutputTokens' must be below 'window'",
      minOutputTokens,
    ],
    [
      fallbackMarginTokens + minOutputTokens < window,
      "'fallbackMarginTokens' + 'minOutputTokens' must be below 'window'",
      fallbackMarginTokens + minOutputTokens,
    ],
  ];
  for (const [holds, rule, value] of rules) {
    if (!holds) {
      throw new RangeError(
        `Cannot compute the budget as ${rule}: current value is ${value}`,
      );
    }
  }
  if (!(options.backend && typeof options.backend.count === "function")) {
    throw new TypeError(
      "Cannot compute the budget as 'backend' must be a Backend",
    );
  }
  return { window, contextLength, fallbackMarginTokens, minOutputTokens };
}

/**
 * The exact count, else the rough estimate, else undefined (both failed);
 * null when the server would reject the request (an estimate would hide that).
 */
async function countPrompt(
  request: JsonObject,
  options: BudgetOptions & { readonly kind: RequestKind },
  source: string,
): Promise<Counted | null | undefined> {
  let exactError: unknown;
  try {
    const counted = validCount(
      await options.backend.count(request, {
        contextLength: options.contextLength,
        kind: options.kind,
        ...(options.signal ? { signal: options.signal } : {}),
      }),
      source,
    );
    if (counted !== undefined) return counted;
    exactError = new TypeError("backend returned an invalid count");
  } catch (error) {
    if (error instanceof TemplateRejectedError) {
      logger.warn(
        "request rejected by the chat template, left unchanged: model={model} source={source} error={error}",
        { model: modelLabel(request), source, error: errorType(error) },
      );
      return null;
    }
    exactError = error;
  }
  const anchored = anchorCount(request, options);
  if (anchored !== undefined) {
    logger.info(
      "exact count failed, using the usage anchor: model={model} source={source} error={error}",
      { model: modelLabel(request), source, error: errorType(exactError) },
    );
    return { tokens: anchored, estimated: 0, source: ANCHOR };
  }
  try {
    const estimate = (options.estimate ?? roughEstimate)(request);
    if (!Number.isFinite(estimate)) throw new TypeError("invalid estimate");
    logger.warn(
      "exact count failed, using the rough estimate: model={model} source={source} error={error}",
      { model: modelLabel(request), source, error: errorType(exactError) },
    );
    const tokens = Math.max(1, Math.ceil(estimate));
    return { tokens, estimated: tokens, source: ROUGH };
  } catch (error) {
    logger.error(
      "exact count and rough estimate failed, request left unchanged: model={model} source={source} error={error} estimate_error={estimateError}",
      {
        model: modelLabel(request),
        source,
        error: errorType(exactError),
        estimateError: errorType(error),
      },
    );
    return undefined;
  }
}

/** A count budget() trusts: tokens, the estimated part, and its label. */
interface Counted {
  readonly tokens: number;
  readonly estimated: number;
  readonly source: string;
}

/** A backend's count as a {@linkcode Counted}, or undefined when it is not a valid count. */
function validCount(
  value: number | CountResult,
  source: string,
): Counted | undefined {
  if (typeof value === "number") {
    return Number.isSafeInteger(value) && value >= 0
      ? { tokens: value, estimated: 0, source }
      : undefined;
  }
  if (typeof value !== "object" || value === null) return undefined;
  const { tokens, estimatedTokens, source: label } = value;
  if (
    !Number.isSafeInteger(tokens) || tokens < 0 ||
    !Number.isSafeInteger(estimatedTokens) || estimatedTokens < 0 ||
    estimatedTokens > tokens
  ) return undefined;
  const named = typeof label === "string" && label !== "" ? label : source;
  return { tokens, estimated: estimatedTokens, source: named };
}

/** The backend's cap reading, checked: a hook that answers nonsense fails. */
function readCaps(
  backend: Backend,
  request: JsonObject,
  kind: RequestKind,
  defaultField: CapField,
): CapReading {
  const cap = backend.readCaps(request, { kind, defaultField });
  const { value, field } = cap ?? {};
  if (typeof field !== "string" || field === "") {
    throw new TypeError("readCaps returned an invalid field");
  }
  if (value !== undefined && !(Number.isSafeInteger(value) && value > 0)) {
    throw new TypeError("readCaps returned an invalid cap");
  }
  return { value, field };
}

function readSource(backend: Backend): string {
  try {
    const { source } = backend;
    if (typeof source === "string" && source !== "") return source;
  } catch (error) {
    logger.error("backend source failed: error={error}", {
      error: errorType(error),
    });
  }
  return "unknown-backend";
}

function hookFailed(
  request: JsonObject,
  source: string,
  error: unknown,
): BudgetResult {
  logger.error(
    "backend hook failed, request left unchanged: model={model} source={source} error={error}",
    {
      model: modelLabel(request),
      source,
      error: errorType(error),
    },
  );
  return unchanged(
    request,
    source,
    `backend hook failed (${errorType(error)})`,
  );
}

function unchanged(
  request: JsonObject,
  source: string,
  reason: string,
): BudgetResult {
  return {
    action: "unchanged",
    request,
    source,
    reason: `${source}: ${reason}`,
  };
}

/** The effective model name for logs: a string of at most 200 characters, else "unknown". */
function modelLabel(request: unknown): string {
  if (!isJsonObject(request)) return "unknown";
  const model = effectiveField(request, "model");
  return typeof model === "string" ? model.slice(0, 200) : "unknown";
}
