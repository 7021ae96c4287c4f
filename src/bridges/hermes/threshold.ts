/**
 * Hermes Agent's compression-threshold arithmetic of two releases, kept
 * apart from the YAML reading so that each step can be checked against
 * Hermes' own `agent/context_compressor.py`: a fallback for proxies that run
 * where Hermes is not installed (where it is, the proxy asks Hermes itself).
 * Every number here is Hermes' constant, not a tuning knob of ours: changing
 * one makes W disagree with the point at which Hermes really compresses.
 *
 * @module
 */

/**
 * The Hermes releases whose arithmetic is mirrored:
 * - `2026-07`: Hermes 0.18.x (read from 0.18.2), which reads neither
 *   `compression.model_thresholds` nor `compression.threshold_tokens`;
 * - `0.19`: Hermes 0.19.x (read from 0.19.0), the same floor as 0.18, and
 *   both keys: the longest `model_thresholds` key contained in the model
 *   name replaces the threshold, `threshold_tokens` caps W;
 * - `2026-09`: a later Hermes whose floor triggers at 85% of the input
 *   budget wherever the 64,000-token floor binds above it, with both keys.
 *
 * `2026-09` disagrees with the others wherever the floor binds below 85% of
 * the input budget (contexts between about 64,000 and 75,300 tokens, 65,536
 * among them).
 */
export const HERMES_RELEASES = ["2026-07", "0.19", "2026-09"] as const;

/** A Hermes release whose threshold arithmetic is mirrored. */
export type HermesRelease = typeof HERMES_RELEASES[number];

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

/** What {@linkcode thresholdTokens} computes with. */
export interface ThresholdInput {
  readonly contextLength: number;
  /** The threshold after the small-context raise. */
  readonly pct: number;
  /** Hermes' output reservation, when it knows one. */
  readonly maxTokens: number | undefined;
  readonly release: HermesRelease;
}

/**
 * The trigger in tokens before any `threshold_tokens` cap: Python's `int()`
 * of a positive float is `Math.floor`, and both runtimes multiply the same
 * IEEE doubles, so the results agree to the token.
 */
export function thresholdTokens(
  { contextLength, pct, maxTokens, release }: ThresholdInput,
): number {
  let effective = contextLength - (maxTokens ?? 0);
  if (effective <= 0) effective = contextLength;
  const value = Math.floor(effective * pct);
  const floored = Math.max(value, MINIMUM_THRESHOLD_TOKENS);
  const high = Math.floor(effective * FLOOR_FALLBACK_RATIO);
  if (release !== "2026-09") {
    // Only a floor that reaches the input budget itself falls back to 85%
    // (kept below the budget): 64,000 of 65,536 stands.
    if (floored < effective) return floored;
    return Math.max(1, Math.min(high, effective - 1));
  }
  // 2026-09: the floor binds (it raised the value) yet leaves less than 15%
  // of the input budget free: Hermes then triggers at 85% instead.
  if (floored > value && floored > high) return Math.max(value, high);
  return floored;
}

/** Whether a release reads `compression.model_thresholds` and `compression.threshold_tokens`. */
export function readsModelKeys(release: HermesRelease): boolean {
  return release !== "2026-07";
}

/** The release names as a sentence: "2026-07, 0.19 or 2026-09". */
export function releaseList(): string {
  return `${HERMES_RELEASES.slice(0, -1).join(", ")} or ${
    HERMES_RELEASES.at(-1)
  }`;
}
