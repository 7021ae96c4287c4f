/**
 * The compactions a conversation went through, as cuts: these messages were
 * replaced by those. Framework bridges re-apply them to each later step or
 * turn that sends the replaced messages again, as copies or as they were.
 *
 * @module
 */

/** One compaction: `original` was replaced by `replacement`. */
interface Cut<M> {
  readonly original: readonly M[];
  readonly replacement: readonly M[];
}

/** The cuts of one conversation, oldest first. */
export class Cuts<M> {
  readonly #cuts: Cut<M>[] = [];

  /** How many compactions there were. */
  get size(): number {
    return this.#cuts.length;
  }

  /** Records that `original` was replaced by `replacement`. */
  add(original: readonly M[], replacement: readonly M[]): void {
    this.#cuts.push({ original: [...original], replacement: [...replacement] });
  }

  /** `history` with each cut whose messages it starts with in place, in order. */
  apply(history: readonly M[]): M[] {
    let current = [...history];
    for (const { original, replacement } of this.#cuts) {
      if (startsWith(current, original)) {
        current = [...replacement, ...current.slice(original.length)];
      }
    }
    return current;
  }
}

/** Whether two lists hold the same messages, by identity or by their JSON. */
export function sameMessages<M>(a: readonly M[], b: readonly M[]): boolean {
  return a.length === b.length && startsWith(a, b);
}

// SDKs copy messages between steps: a copy is the same message.
function startsWith<M>(list: readonly M[], prefix: readonly M[]): boolean {
  if (prefix.length > list.length) return false;
  return prefix.every((message, i) =>
    message === list[i] || JSON.stringify(message) === JSON.stringify(list[i])
  );
}
