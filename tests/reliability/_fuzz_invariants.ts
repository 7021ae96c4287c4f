/**
 * The promise budget() makes about the request it hands back, checked from
 * the outside: the caps are read as the backend reads them, at both levels.
 */
import type { Backend, BudgetResult, JsonObject } from "../../mod.ts";

const CAP_FIELDS = ["max_tokens", "max_completion_tokens", "max_output_tokens"];

function isObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Every cap of `request` as `backend` reads it, top level and `extra_body`. */
export function capsOf(request: unknown, backend: Backend): number[] {
  if (!isObject(request)) return [];
  const levels = [request];
  if (isObject(request.extra_body)) levels.push(request.extra_body);
  return levels.flatMap((level) =>
    CAP_FIELDS.filter((field) => Object.hasOwn(level, field))
      .map((field) => backend.coerceOutputBudget(level[field]))
      .filter((cap): cap is number => cap !== undefined)
  );
}

/** The caller's cap: the smallest cap of the request, or undefined. */
export function callerCap(
  request: unknown,
  backend: Backend,
): number | undefined {
  const caps = capsOf(request, backend);
  return caps.length === 0 ? undefined : Math.min(...caps);
}

/**
 * Why `result` breaks the promise, or undefined when it keeps it. A request
 * left alone ("compress", "unchanged") must be the caller's own object; a
 * "set" must carry exactly one cap, at the top level, that is the result's
 * `maxTokens`, at least min(R, caller's cap) and at most the caller's cap;
 * and the request must serialise.
 */
export function resultProblem(
  request: unknown,
  result: BudgetResult,
  backend: Backend,
  minOutputTokens: number,
): string | undefined {
  try {
    JSON.stringify(result.request);
  } catch (error) {
    return `the result does not serialise (${(error as Error).name})`;
  }
  if (result.action !== "set") {
    return result.request === request
      ? undefined
      : `"${result.action}" did not hand back the caller's object`;
  }
  const caller = callerCap(request, backend);
  const required = Math.min(minOutputTokens, caller ?? minOutputTokens);
  const fields = aliasesOf(result.request);
  const written = capsOf(result.request, backend);
  if (
    fields.join() !== result.field ||
    written.join() !== String(result.maxTokens)
  ) {
    return `"set" left ${fields.join()} = ${written.join()}, not ${result.field} = ${result.maxTokens}`;
  }
  const cap = result.maxTokens!;
  if (caller !== undefined && cap > caller) {
    return `"set" ${cap} above the caller's cap ${caller}`;
  }
  if (cap < required) {
    return `"set" ${cap} below the required minimum ${required}`;
  }
  return undefined;
}

/** The cap fields present, whatever their values: top level, then `extra_body.` ones. */
function aliasesOf(request: JsonObject): string[] {
  const extra = isObject(request.extra_body) ? request.extra_body : {};
  return [
    ...CAP_FIELDS.filter((field) => Object.hasOwn(request, field)),
    ...CAP_FIELDS.filter((field) => Object.hasOwn(extra, field)).map((field) =>
      `extra_body.${field}`
    ),
  ];
}
