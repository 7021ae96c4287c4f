/**
 * Counts by key, bounded by entries and by the UTF-8 bytes of the keys: the
 * store of a count cache's core, and of a local engine's piece counts.
 *
 * @module
 */
import { RecentMap } from "../_internal/recent_map.ts";

/** The bounds of an {@linkcode Lru}. */
export interface LruBounds {
  readonly maxEntries: number;
  readonly maxKeyBytes: number;
}

/** UTF-8 length without encoding: keys are counted on every store. */
function byteLength(text: string): number {
  let bytes = text.length;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code >= 0xd800 && code <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      // A surrogate pair is 2 code units and 4 bytes.
      if (next >= 0xdc00 && next <= 0xdfff) {
        bytes += 2;
        i++;
        continue;
      }
    }
    if (code >= 0x800) bytes += 2;
    else if (code >= 0x80) bytes += 1;
  }
  return bytes;
}

/** Counts by key, least recently used first. */
export class Lru {
  readonly #counts = new RecentMap<string, number>();
  readonly #settings: LruBounds;
  #keyBytes = 0;

  constructor(settings: LruBounds) {
    this.#settings = settings;
  }

  get size(): number {
    return this.#counts.size;
  }

  get keyBytes(): number {
    return this.#keyBytes;
  }

  get(key: string): number | undefined {
    return this.#counts.use(key);
  }

  set(key: string, count: number): void {
    const bytes = byteLength(key);
    // A key that alone exceeds the budget would evict everything and then itself.
    if (bytes > this.#settings.maxKeyBytes) return;
    if (this.#counts.peek(key) === undefined) this.#keyBytes += bytes;
    this.#counts.put(key, count);
    const { maxEntries, maxKeyBytes } = this.#settings;
    while (this.#counts.size > maxEntries || this.#keyBytes > maxKeyBytes) {
      const oldest = this.#counts.oldest()!;
      this.#counts.delete(oldest);
      this.#keyBytes -= byteLength(oldest);
    }
  }

  clear(): void {
    this.#counts.clear();
    this.#keyBytes = 0;
  }
}
