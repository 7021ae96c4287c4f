/**
 * A second tier behind a count cache's LRU: a store several processes share
 * (see `src/replicas/`). Only the caller that leads a missing key's count asks
 * it, so singleflight still holds within a process.
 *
 * @module
 */

/** A store of counts behind the cache's own. Neither method may throw or hang. */
export interface CountTier {
  /**
   * The count stored under `key`, or `undefined` when there is none or the
   * store did not answer within its own deadline.
   */
  get(key: string): Promise<number | undefined>;
  /** Stores a count just computed; returns at once, the write goes on alone. */
  set(key: string, count: number): void;
}

/**
 * `compute` with `tier` in front: its count when it has one, else the
 * computed count, which is then written to the tier.
 */
export function throughTier(
  tier: CountTier,
  key: string,
  compute: () => Promise<number>,
): () => Promise<number> {
  return async function tieredCount(): Promise<number> {
    const stored = await tier.get(key);
    if (stored !== undefined) return stored;
    const count = await compute();
    // A count the cache would refuse is not shared either.
    if (Number.isSafeInteger(count) && count >= 0) tier.set(key, count);
    return count;
  };
}
