/**
 * The "did you mean" part of an error about a mistyped name.
 *
 * @module
 */
import { nearestName } from "../_internal/nearest_name.ts";

/**
 * ` (did you mean 'NAME'?)` for the known name closest to `given`, or `""`
 * when none is close. Only known names are quoted, never what was given:
 * a setting may hold a secret.
 */
export function suggestion(given: string, known: readonly string[]): string {
  const nearest = nearestName(given, known);
  return nearest === undefined ? "" : ` (did you mean '${nearest}'?)`;
}
