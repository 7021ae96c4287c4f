/**
 * The budget function: the output cap still free below the compression
 * window, counted exactly, with a rough fallback and a fail-open end.
 *
 * @module
 */
import { getLogger } from "@logtape/logtape";
import type {
  Backend,
  CapReading,
  JsonObject,
  ReadCapsOptions,
} from "./backend.ts";
import { requestShape } from "./kind.ts";
import { minDefined } from "./caps.ts";
import { errorType } from "./error_type.ts";
import { isJsonObject, modelLabel } from "./request.ts";
import { type BudgetRoute, pickRoute } from "./route.ts";
import { type Settings, validateBudgetOptions } from "./budget_settings.ts";
import type { BudgetOptions, BudgetResult } from "./budget_options.ts";
import { type Counted, countPrompt, ROUGH } from "./prompt_count.ts";

export type { BudgetRoute, BudgetTarget } from "./route.ts";
export type { BudgetOptions, BudgetResult } from "./budget_options.ts";

const logger = getLogger(["incontext", "budget"]);

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
  const source = readSource(options.backend);
  try {
    return await decide(request, { options, settings, source });
  } catch (error) {
    if (error instanceof HookFailure) {
      return hookFailed(request, source, error);
    }
    throw error;
  }
}

/** What every step of one budget reads. */
interface Budgeting {
  readonly options: BudgetOptions;
  readonly settings: Settings;
  /** The backend's source label. */
  readonly source: string;
}

/** The steps of one budget; a backend hook that fails ends it with {@linkcode HookFailure}. */
async function decide(
  request: JsonObject,
  budgeting: Budgeting,
): Promise<BudgetResult> {
  const { options, source } = budgeting;
  const { backend } = options;
  const shape = hook(() =>
    requestShape(request, options.kind, (body) => backend.requestKind(body))
  );
  // Nothing is counted before the count: such answers name no source.
  if ("problem" in shape) {
    return unchanged(request, NONE, `unsupported request: ${shape.problem}`);
  }
  const { kind } = shape;
  const routes = options.routes ?? (options.route && [options.route]);
  const route = routes && pickRoute(request, routes, options.target);
  if (typeof route === "string") {
    return unchanged(request, NONE, `outside the budgeted route (${route})`);
  }
  const settings = routeSettings(budgeting, route);
  const defaultField = options.defaultField ??
    (kind === "responses" ? "max_output_tokens" : "max_tokens");
  const cap = hook(() => checkedCaps(backend, request, { kind, defaultField }));
  if (cap.invalid !== undefined) {
    // A cap the server refuses: any cap written instead would turn a
    // request it answers 400 into one it serves.
    return unchanged(
      request,
      NONE,
      `'${cap.invalid}' is not a positive integer as the server reads it, so the server answers the request as sent`,
    );
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
      NONE,
      "exact count and rough estimate both failed",
    );
  }
  // After the count: some servers' limits depend on the prompt (SGLang:
  // prompt + max_tokens <= context - 1; llama.cpp: n_ctx - prompt).
  const limit = hook(() =>
    outputLimit(backend, request, {
      contextLength: settings.contextLength,
      kind,
      promptTokens: counted.tokens,
    }), counted.source);
  const outcome: Outcome = {
    request,
    settings,
    counted,
    cap,
    room: allowance(settings, { counted, cap, limit }),
  };
  if (outcome.room.maxTokens < outcome.room.required) return compress(outcome);
  const written = hook(() => {
    const copy = backend.writeCap(request, cap.field, outcome.room.maxTokens);
    if (!isJsonObject(copy)) {
      throw new TypeError("writeCap returned a non-object");
    }
    return copy;
  }, counted.source);
  return set(outcome, written);
}

/** The settings with the route's own window, checked like the budget's. */
function routeSettings(
  { options, settings }: Budgeting,
  route: BudgetRoute | undefined,
): Settings {
  if (route?.window === undefined || route.window === settings.window) {
    return settings;
  }
  return validateBudgetOptions({ ...options, window: route.window });
}

/** The source of an answer for which nothing was counted. */
const NONE = "none";

/** A backend hook threw or answered nonsense: the request goes on unchanged. */
class HookFailure extends Error {
  /** The source of the count made before the hook failed, or `"none"`. */
  readonly counted: string;
  constructor(cause: unknown, counted: string) {
    super("A backend hook failed", { cause });
    this.name = "HookFailure";
    this.counted = counted;
  }
}

/**
 * Runs a backend hook; whatever it throws ends the budget as a hook
 * failure, after the count of `counted` (none, before the count).
 */
function hook<T>(run: () => T, counted: string = NONE): T {
  try {
    return run();
  } catch (error) {
    throw new HookFailure(error, counted);
  }
}

/** The backend's output limit for this prompt, checked to be an integer. */
function outputLimit(
  backend: Backend,
  request: JsonObject,
  options: Parameters<Backend["outputBudgetLimit"]>[1],
): number | undefined {
  const limit = backend.outputBudgetLimit(request, options);
  if (limit !== undefined && !Number.isSafeInteger(limit)) {
    throw new TypeError("outputBudgetLimit returned a non-integer");
  }
  return limit;
}

/** What the arithmetic leaves for the output. */
interface Allowance {
  /** The margin taken off the window for the estimated part of the count. */
  readonly margin: number;
  /** The smallest output worth sending: min(R, caller's cap). */
  readonly required: number;
  /** min(W - P - margin, caller's cap, backend limit). */
  readonly maxTokens: number;
  /** The backend's output limit, if any. */
  readonly limit: number | undefined;
}

function allowance(
  settings: Settings,
  { counted, cap, limit }: {
    readonly counted: Counted;
    readonly cap: CapReading;
    readonly limit: number | undefined;
  },
): Allowance {
  const { window, fallbackMarginTokens, minOutputTokens } = settings;
  // The margin covers only what was estimated: all of a rough estimate,
  // the appended part of an anchored count, nothing of an exact one.
  const margin = counted.source === ROUGH
    ? fallbackMarginTokens
    : Math.min(fallbackMarginTokens, counted.estimated);
  const remaining = window - counted.tokens - margin;
  const required = minDefined(minOutputTokens, cap.value) ?? minOutputTokens;
  const maxTokens = minDefined(remaining, cap.value, limit) ?? remaining;
  return { margin, required, maxTokens, limit };
}

/** A counted request and what is left for its output. */
interface Outcome {
  readonly request: JsonObject;
  readonly settings: Settings;
  readonly counted: Counted;
  readonly cap: CapReading;
  readonly room: Allowance;
}

function detail({ settings, counted, room }: Outcome): string {
  return `compression_window=${settings.window}, prompt_tokens=${counted.tokens}, max_tokens=${room.maxTokens}`;
}

/**
 * Why a request must compress, in counts a reader can check: the room left
 * is never printed below 0 (a prompt past the window leaves none).
 */
function shortfall({ settings, counted, room }: Outcome): string {
  const counts =
    `compression_window=${settings.window}, prompt_tokens=${counted.tokens}`;
  return room.maxTokens > 0
    ? `${counts}, max_tokens=${room.maxTokens} is below the required ${room.required}`
    : `${counts}: no room is left for output (at least ${room.required} required)`;
}

/** Less than the minimum is left: the host must compress. */
function compress(outcome: Outcome): BudgetResult {
  const { request, settings, counted, cap, room } = outcome;
  const { window } = settings;
  logger.warn(
    "action=requires_compression model={model} source={source} window={window} prompt_tokens={promptTokens} required={required}",
    {
      model: modelLabel(request),
      source: counted.source,
      window,
      promptTokens: counted.tokens,
      required: room.required,
    },
  );
  // A clamped reply stops at R: beyond it, the reply would fill the room the
  // host's compression request needs next.
  const hard = Math.min(
    settings.contextLength - counted.tokens - room.margin,
    settings.minOutputTokens,
  );
  return {
    action: "compress",
    request,
    source: counted.source,
    reason: `${counted.source}: ${shortfall(outcome)}: compress first`,
    promptTokens: counted.tokens,
    estimatedTokens: counted.estimated,
    maxTokens: room.maxTokens,
    field: cap.field,
    window,
    requiredTokens: room.required,
    hardLimitTokens: minDefined(hard, cap.value, room.limit) ?? hard,
  };
}

/** The request carries its budget. */
function set(outcome: Outcome, written: JsonObject): BudgetResult {
  const { request, settings, counted, cap, room } = outcome;
  logger.debug(
    "action=set model={model} source={source} window={window} prompt_tokens={promptTokens} max_tokens={maxTokens}",
    {
      model: modelLabel(request),
      source: counted.source,
      window: settings.window,
      promptTokens: counted.tokens,
      maxTokens: room.maxTokens,
    },
  );
  return {
    action: "set",
    request: written,
    source: counted.source,
    reason: `${counted.source}: ${detail(outcome)}`,
    promptTokens: counted.tokens,
    estimatedTokens: counted.estimated,
    maxTokens: room.maxTokens,
    field: cap.field,
    window: settings.window,
  };
}

/** The backend's cap reading, checked: a hook that answers nonsense fails. */
function checkedCaps(
  backend: Backend,
  request: JsonObject,
  options: ReadCapsOptions,
): CapReading {
  const cap = backend.readCaps(request, options);
  const { value, field, invalid } = cap ?? {};
  if (typeof field !== "string" || field === "") {
    throw new TypeError("readCaps returned an invalid field");
  }
  if (value !== undefined && !(Number.isSafeInteger(value) && value > 0)) {
    throw new TypeError("readCaps returned an invalid cap");
  }
  if (invalid === undefined) return { value, field };
  if (typeof invalid !== "string" || !SAFE_PATH.test(invalid)) {
    throw new TypeError("readCaps returned an invalid 'invalid' path");
  }
  return { value, field, invalid };
}

/** A cap path fit for a reason (it is logged): dotted field names only. */
const SAFE_PATH = /^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*$/;

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
  failure: HookFailure,
): BudgetResult {
  const error = errorType(failure.cause);
  logger.error(
    "backend hook failed, request left unchanged: model={model} source={source} error={error}",
    { model: modelLabel(request), source, error },
  );
  return unchanged(request, failure.counted, `backend hook failed (${error})`);
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
