/**
 * An error's type name: the only part of an error that is safe to log, since
 * messages can carry prompt text, URLs or provider error text.
 */
export function errorType(error: unknown): string {
  if (error instanceof Error) return error.name;
  return error === null ? "null" : error === undefined ? "none" : typeof error;
}
