/**
 * The parsers settings share: each reads a trimmed, non-blank value and
 * reports a broken rule in its own words, never the value, which may be a
 * secret.
 *
 * @module
 */
import type { Parse, Parsed } from "./setting.ts";
import { checkHttpUrl } from "./url.ts";
import { MAX_TIMEOUT_SECONDS } from "./timer_limit.ts";

/** A value read. */
export function ok<T>(value: T): Parsed<T> {
  return { value, rules: [] };
}

/** A value that broke `rules`. */
export function broken(...rules: string[]): Parsed<never> {
  return { rules };
}

/** Any text, as it is. */
export const text: Parse<string> = ok;

/**
 * `parse`, then `test` on what it read: a failed test adds `rule`. The test
 * runs on a value read with a broken rule too, so both are reported.
 */
export function refine<T>(
  parse: Parse<T>,
  test: (value: T) => boolean,
  rule: string,
): Parse<T> {
  return (value) => {
    const parsed = parse(value);
    if (!("value" in parsed) || test(parsed.value as T)) return parsed;
    return { value: parsed.value as T, rules: [...parsed.rules, rule] };
  };
}

/** `parse`, then `map` on a value read without a broken rule. */
export function map<T, U>(parse: Parse<T>, map: (value: T) => U): Parse<U> {
  return (value) => {
    const parsed = parse(value);
    return parsed.rules.length > 0 ? { rules: parsed.rules } : ok(
      map(parsed.value as T),
    );
  };
}

/** Text that matches `pattern`. */
export function matching(pattern: RegExp, rule: string): Parse<string> {
  return (value) => pattern.test(value) ? ok(value) : broken(rule);
}

/** One of `values`, as written. */
export function oneOf<const V extends string>(
  values: readonly V[],
  rule: string,
): Parse<V> {
  return (value) =>
    (values as readonly string[]).includes(value)
      ? ok(value as V)
      : broken(rule);
}

/** An integer of at least `min`, written in decimal digits. */
export function integer(min: 0 | 1): Parse<number> {
  const rule = min === 0
    ? "must be a non-negative integer"
    : "must be a positive integer";
  return (value) => {
    if (!/^\d+$/.test(value)) return broken(rule);
    const n = Number(value);
    if (n < min) return broken(rule);
    return Number.isSafeInteger(n)
      ? ok(n)
      : { value: n, rules: [`must be at most ${Number.MAX_SAFE_INTEGER}`] };
  };
}

const DECIMAL = /^(?:\d+\.?\d*|\.\d+)$/;

/** A number of seconds above 0, no longer than a timer can wait. */
export const seconds: Parse<number> = (value) => {
  const rule = "must be a finite number of seconds greater than 0";
  if (!DECIMAL.test(value)) return broken(rule);
  const n = Number(value);
  if (!(n > 0)) return broken(rule);
  return n <= MAX_TIMEOUT_SECONDS
    ? ok(n)
    : { value: n, rules: [`must be at most ${MAX_TIMEOUT_SECONDS} seconds`] };
};

/** A fraction in [0, 1) (`0.02`) or a percentage (`2%`). */
export const fraction: Parse<number> = (value) => {
  const rule =
    "must be a fraction in [0, 1) such as 0.02, or a percentage such as 2%";
  if (!/^(?:\d+\.?\d*|\.\d+)%?$/.test(value)) return broken(rule);
  const n = value.endsWith("%")
    ? Number(value.slice(0, -1)) / 100
    : Number(value);
  return n >= 0 && n < 1 ? ok(n) : broken(rule);
};

/**
 * What `Headers` accepts: Latin-1 code units without NUL, CR or LF. Checked
 * at start-up so a bad value fails once, not on every request.
 */
export const headerValue: Parse<string> = matching(
  /^[^\0\r\n\u0100-\uffff]*$/,
  "must be a valid HTTP header value",
);

/** An http(s) URL with a host, no credentials and no fragment. */
export const httpUrl: Parse<string> = (value) => {
  const rule = checkHttpUrl(value);
  return rule === undefined ? ok(value) : broken(rule);
};

/** The items of a comma-separated list, each trimmed. */
export function commaItems(value: string): string[] {
  return value.split(",").map((item) => item.trim());
}
