/**
 * What of an error may be logged or chained: its type, never its message.
 * Apart from `errors.ts`: it is the rule every layer follows.
 *
 * @module
 */
import { CountError, countErrorOf } from "./errors.ts";

/**
 * An error's type name: the only part of an error that is safe to log, since
 * messages can carry prompt text, URLs or provider error text.
 */
export function errorType(error: unknown): string {
  if (error instanceof Error) return error.name;
  return error === null ? "null" : error === undefined ? "none" : typeof error;
}

/**
 * The cause to chain to a CountError: only the original error's type. Fetch
 * errors quote the request URL (with any query-string secret), and server or
 * template text can echo the prompt, so their messages never travel on.
 */
export function safeCause(error: unknown): Error {
  const cause = new Error(`${errorType(error)} (details withheld)`);
  cause.name = errorType(error);
  return cause;
}

/**
 * `error` itself when it is a CountError (its message holds no prompt text),
 * else a CountError saying `what` failed, with the original's type only.
 */
export function asCountError(error: unknown, what: string): CountError {
  const known = countErrorOf(error);
  return known instanceof CountError
    ? known
    : new CountError(`${what}: ${errorType(error)}`, {
      cause: safeCause(error),
    });
}
