/**
 * Hermes Agent's compression-threshold arithmetic (Hermes 2026-09), kept
 * apart from the YAML reading so that each step can be checked against
 * Hermes' own `agent/context_compressor.py`. Every number here is Hermes'
 * constant, not a tuning knob of ours: changing one makes W disagree with the
 * point at which Hermes really compresses.
 *
 * @module
 */

/** Below this context length Hermes raises the threshold (raise-only). */
export const SMALL_CONTEXT_LIMIT = 512_000;
/** The threshold Hermes raises small-context models to. */
export const SMALL_CONTEXT_THRESHOLD = 0.75;
/** Hermes never compresses below this many tokens, unless the window is too small for it. */
export const MINIMUM_THRESHOLD_TOKENS = 64_000;
/** Where Hermes triggers instead when its floor would leave too little room. */
export const FLOOR_FALLBACK_RATIO = 0.85;

/**
 * The threshold for `model`: the `model_thresholds` entry whose key is the
 * longest substring of the model name, else `fallback`. As in Hermes, keys
 * match case-sensitively, an empty key never wins, and on a tie the key met
 * first wins.
 */
export function modelThreshold(
  model: string | undefined,
  thresholds: Readonly<Record<string, number>> | undefined,
  fallback: number,
): number {
  if (model === undefined || model === "" || thresholds === undefined) {
    return fallback;
  }
  let best = "";
  for (const key of Object.keys(thresholds)) {
    if (key.length > best.length && model.includes(key)) best = key;
  }
  return best === "" ? fallback : thresholds[best] ?? fallback;
}

/** Hermes' small-context raise: below 512,000 tokens, at least 0.75. */
export function raisedThreshold(contextLength: number, pct: number): number {
  return contextLength < SMALL_CONTEXT_LIMIT
    ? Math.max(pct, SMALL_CONTEXT_THRESHOLD)
    : pct;
}

/**
 * The trigger in tokens before the `threshold_tokens` cap: Python's `int()`
 * of a positive float is `Math.floor`, and both runtimes multiply the same
 * IEEE doubles, so the results agree to the token.
 */
export function thresholdTokens(
  contextLength: number,
  pct: number,
  maxTokens: number | undefined,
): number {
  let effective = contextLength - (maxTokens ?? 0);
  if (effective <= 0) effective = contextLength;
  const value = Math.floor(effective * pct);
  const floored = Math.max(value, MINIMUM_THRESHOLD_TOKENS);
  const high = Math.floor(effective * FLOOR_FALLBACK_RATIO);
  // The floor binds (it raised the value) yet leaves less than 15% of the
  // input budget free: Hermes then triggers at 85% instead.
  if (floored > value && floored > high) return Math.max(value, high);
  return floored;
}
