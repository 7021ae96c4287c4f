/**
 * A `Map` in least-recently-used order that moves an entry only when it is
 * not already the most recent: the count cache, the anchor store and the
 * count-key memo share it.
 *
 * @module
 */

/**
 * Entries oldest first. A move deletes and re-inserts, and the deleted slots
 * make a `Map` rebuild its table now and then; a server sending one request
 * again and again uses the same entry each time, and that entry is already
 * the last, so it stays where it is.
 */
export class RecentMap<K, V> {
  readonly #map = new Map<K, V>();
  /**
   * The key put or used last. Once deleted it is merely absent: a use finds
   * nothing, and a put appends it anew, so it needs no reset.
   */
  #newest: K | undefined;

  /** How many entries it holds. */
  get size(): number {
    return this.#map.size;
  }

  /** The value of `key`, left where it is. */
  peek(key: K): V | undefined {
    return this.#map.get(key);
  }

  /** The value of `key`, made the most recent. */
  use(key: K): V | undefined {
    const value = this.#map.get(key);
    if (value !== undefined && key !== this.#newest) {
      this.#map.delete(key);
      this.#map.set(key, value);
      this.#newest = key;
    }
    return value;
  }

  /** Stores `value` under `key` as the most recent. */
  put(key: K, value: V): void {
    if (key !== this.#newest) this.#map.delete(key);
    this.#map.set(key, value);
    this.#newest = key;
  }

  /** Removes `key`; true when it was there. */
  delete(key: K): boolean {
    return this.#map.delete(key);
  }

  /** The oldest key, or undefined when empty. */
  oldest(): K | undefined {
    return this.#map.keys().next().value;
  }

  /** The keys, oldest first. */
  keys(): IterableIterator<K> {
    return this.#map.keys();
  }

  /** Removes every entry. */
  clear(): void {
    this.#map.clear();
  }
}
