/**
 * Every text an error carries along its cause chain, for leak checks.
 *
 * @module
 */

/**
 * Every name, message and stack along an error's cause chain (16 deep at
 * most): what leak checks search for secrets and prompt text.
 */
export function errorTexts(error: unknown): string[] {
  const texts: string[] = [];
  for (let e = error, depth = 0; e !== undefined && depth < 16; depth++) {
    if (!(e instanceof Error)) {
      texts.push(String(e));
      break;
    }
    texts.push(e.name, e.message, e.stack ?? "");
    e = e.cause;
  }
  return texts;
}
