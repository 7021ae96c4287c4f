/**
 * Reading the count cache's one optional capability, the core a cache
 * counts in (`COUNT_CACHE_CORE` in `types.ts`). The caches this package
 * makes set it; a cache of another make leaves it out, and whatever would
 * have run in the core runs on the caller's thread instead. Code that needs
 * the core asks for the capability, never for a class.
 *
 * @module
 */
import type { EngineChannel } from "./engine_slot.ts";
import type { CountTier } from "./tier.ts";
import { COUNT_CACHE_CORE, type CountCache } from "./types.ts";

/**
 * The engine channel of `cache`'s core; `undefined` for `null` or a cache
 * without a core, whose caller then runs the work on its own thread.
 */
export function engineChannelOf(
  cache: CountCache | null,
): EngineChannel | undefined {
  return cache?.[COUNT_CACHE_CORE];
}

/**
 * The count `cache` holds under `key()`, read at once (see
 * `CountCacheCore.peek`); `undefined` for a cache without a core.
 */
export function peekCount(
  cache: CountCache | null,
  key: () => string,
): number | undefined {
  return cache?.[COUNT_CACHE_CORE]?.peek(key);
}

/**
 * Puts `tier` behind `cache` (or takes it away, with `undefined`); a cache
 * without a core is left as it is.
 *
 * @returns Whether the cache took the tier.
 */
export function attachCountTier(
  cache: CountCache | null,
  tier: CountTier | undefined,
): boolean {
  const core = cache?.[COUNT_CACHE_CORE];
  if (core === undefined) return false;
  core.attachTier(tier);
  return true;
}
