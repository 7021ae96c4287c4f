/**
 * Count-cache entries shared by replicas: the tier the count cache's leader
 * asks before it counts, and writes each new count to.
 *
 * @module
 */
import type { CountTier } from "../cache/tier.ts";
import { countRecordKey, decodeCount, encodeCount } from "./records.ts";
import type { SharedStore } from "./store.ts";

/**
 * The count cache's second tier in a shared store: a count one replica
 * made is a hit on another. A record of another version or shape is a miss.
 *
 * @param shared The store the replicas share.
 * @returns The tier, for `attachCountTier()`.
 */
export function sharedCountTier(shared: SharedStore): CountTier {
  return {
    async get(key: string): Promise<number | undefined> {
      const texts = await shared.read("count", [countRecordKey(key)]);
      const count = decodeCount(texts?.[0] ?? null);
      if (count === "invalid") {
        shared.invalid("count");
        return undefined;
      }
      return count;
    },
    set(key: string, count: number): void {
      shared.write("count", countRecordKey(key), encodeCount(count));
    },
  };
}
