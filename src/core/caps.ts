/**
 * The caller's output caps, read as the server reads them. Apart from
 * `budget.ts` for the `Backend` class's cap hooks.
 *
 * @module
 */
import { type CapField, isJsonObject, type JsonObject } from "./request.ts";

/** Reads one cap value as the server does: a positive integer, or `undefined`. */
export type CoerceCap = (value: unknown) => number | undefined;

/** Every cap alias, in the order ties between equal caps are broken. */
export const CAP_FIELDS: readonly CapField[] = [
  "max_tokens",
  "max_completion_tokens",
  "max_output_tokens",
];

/** The caller's cap as the server will read it. */
export interface CallerCap {
  /** The smallest positive cap at either level, or undefined when none. */
  readonly value: number | undefined;
  /** The field to write: the smallest top-level cap's, else the nested one's, else the default. */
  readonly field: CapField;
  /**
   * The first cap field present whose value the server does not read as a
   * positive integer (0, -1, 1.5, `[]`: a request it refuses), as a path
   * such as `max_tokens` or `extra_body.max_tokens`. A `null` cap is none.
   */
  readonly invalid?: string;
}

/**
 * Reads the caller's caps at the top level and in `extra_body` through the
 * backend's coercion (which may throw: the caller treats that as a hook
 * failure).
 */
export function readCallerCap(
  request: JsonObject,
  coerce: CoerceCap,
  defaultField: CapField,
): CallerCap {
  const top = smallestCap(request, coerce);
  const extra = request.extra_body;
  const nested = isJsonObject(extra) ? smallestCap(extra, coerce) : {};
  const value = minDefined(top.best?.value, nested.best?.value);
  const field = top.best?.field ?? nested.best?.field ?? defaultField;
  const invalid = top.invalid ??
    (nested.invalid && `extra_body.${nested.invalid}`);
  return invalid === undefined ? { value, field } : { value, field, invalid };
}

/** One level's smallest cap, and its first cap the server would refuse. */
interface LevelCaps {
  readonly best?: { readonly value: number; readonly field: CapField };
  readonly invalid?: CapField;
}

function smallestCap(
  level: { readonly [key: string]: unknown },
  coerce: CoerceCap,
): LevelCaps {
  let best: { value: number; field: CapField } | undefined;
  let invalid: CapField | undefined;
  for (const field of CAP_FIELDS) {
    if (!Object.hasOwn(level, field) || level[field] === null) continue;
    const value = coerce(level[field]);
    if (value === undefined) invalid ??= field;
    else if (best === undefined || value < best.value) best = { value, field };
  }
  return { ...(best && { best }), ...(invalid && { invalid }) };
}

/**
 * Returns a copy of `request` whose only cap is `field: value` at the top
 * level: every other alias is removed from both levels, and an emptied
 * `extra_body` stays `{}`. Only the objects it changes are copied.
 */
export function writeCap(
  request: JsonObject,
  field: string,
  value: number,
): Record<string, unknown> {
  const copy = withoutCaps(request);
  const extra = request.extra_body;
  if (isJsonObject(extra) && CAP_FIELDS.some((f) => Object.hasOwn(extra, f))) {
    copy.extra_body = withoutCaps(extra);
  }
  copy[field] = value;
  return copy;
}

/**
 * A shallow copy without the cap aliases. Built rather than `delete`d: a
 * deleted property turns the copy into a slow dictionary object, which V8
 * then serialises recursively (a deeply nested body overflows the stack).
 * `fromEntries` defines own data properties, so a `"__proto__"` key stays data.
 */
function withoutCaps(level: JsonObject): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(level).filter(([key]) => !CAP_NAMES.has(key)),
  );
}

const CAP_NAMES: ReadonlySet<string> = new Set(CAP_FIELDS);

/** The smallest of the defined numbers, or undefined when none is. */
export function minDefined(
  ...values: readonly (number | undefined)[]
): number | undefined {
  let min: number | undefined;
  for (const value of values) {
    if (value !== undefined && (min === undefined || value < min)) min = value;
  }
  return min;
}
