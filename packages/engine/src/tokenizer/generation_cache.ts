/**
 * A bounded memo of tokenized words without per-hit bookkeeping.
 *
 * @module
 */

/**
 * A bounded memo: entries go to the current generation; when it is full it
 * becomes the old one (the previous old one is dropped), and a hit in the
 * old one moves forward. Unlike an LRU it neither deletes nor re-inserts
 * on a hit in the current generation.
 *
 * @example Remember a word
 * ```ts
 * import { GenerationCache } from "./generation_cache.ts";
 * const cache = new GenerationCache<number>(2);
 * cache.put("a", 1);
 * console.assert(cache.get("a") === 1);
 * ```
 */
export class GenerationCache<V> {
  readonly #capacity: number;
  #current = new Map<string, V>();
  #old = new Map<string, V>();

  /** @param capacity Entries per generation: at most twice this are held. */
  constructor(capacity: number) {
    this.#capacity = capacity;
  }

  /**
   * The value of a key.
   *
   * @param key The key.
   * @returns The value, or `undefined`.
   */
  get(key: string): V | undefined {
    const value = this.#current.get(key);
    if (value !== undefined) return value;
    const old = this.#old.get(key);
    if (old !== undefined) this.put(key, old);
    return old;
  }

  /**
   * Remembers a value.
   *
   * @param key The key.
   * @param value The value.
   */
  put(key: string, value: V): void {
    if (this.#current.size >= this.#capacity) {
      this.#old = this.#current;
      this.#current = new Map();
    }
    this.#current.set(key, value);
  }

  /** Forgets every entry. */
  clear(): void {
    this.#current = new Map();
    this.#old = new Map();
  }
}
