/**
 * A grown conversation crosses to the count worker as a delta: the messages
 * after the longest prefix it shares with one of the last few conversations
 * sent, and which one. Cloning a long conversation across the port and back
 * into objects grows with all of its messages; a delta costs only the
 * messages of one turn.
 *
 * Both sides remember the messages of the last {@linkcode RECENT} count
 * requests, in the order the port delivers them, under the request's id.
 * The client compares against a copy (the engine's `plainCopy()`: the
 * structure copied, the immutable strings shared), so that a caller editing
 * its message objects after a count cannot make a stale prefix look equal. A core that lacks the
 * base (a new worker, or the sides drifted) asks for the whole payload.
 *
 * @module
 */
import { equalsPlainCopy, plainCopy } from "@incontext/engine";

/** How many message lists each side remembers. */
export const RECENT = 4;
/** What a delta names: the base request's id and how many of its messages to keep. */
export interface DeltaBase {
  readonly id: number;
  readonly keep: number;
}

interface Sent {
  readonly id: number;
  readonly messages: readonly unknown[];
}

/** The client's side: which base a new message list extends. */
export class SentMessages {
  #recent: Sent[] = [];

  /**
   * Records `messages` as sent under `id`, and tells which earlier list
   * they extend and by how much, if any.
   *
   * @param id The count request's id.
   * @param messages The payload's messages.
   * @returns The base and the number of its leading messages to keep, or
   * `undefined` when no remembered list shares a first message.
   */
  record(id: number, messages: readonly unknown[]): DeltaBase | undefined {
    let best: DeltaBase | undefined;
    let bestSent: Sent | undefined;
    for (const sent of this.#recent) {
      // Newest first: a growing conversation matches the newest list whole,
      // and no shorter list can share more.
      if (sent.messages.length <= (best?.keep ?? 0)) continue;
      const limit = Math.min(sent.messages.length, messages.length);
      let keep = 0;
      while (
        keep < limit && equalsPlainCopy(messages[keep], sent.messages[keep])
      ) keep++;
      if (keep > (best?.keep ?? 0)) {
        best = { id: sent.id, keep };
        bestSent = sent;
      }
      if (keep === messages.length) break;
    }
    // The shared messages equal their copies, which nothing changes:
    // only the rest is copied.
    const shared = best?.keep ?? 0;
    const kept = bestSent?.messages.slice(0, shared) ?? [];
    for (let i = shared; i < messages.length; i++) {
      kept.push(plainCopy(messages[i]));
    }
    this.#recent.unshift({ id, messages: kept });
    if (this.#recent.length > RECENT) this.#recent.pop();
    return best;
  }

  /** Forgets every list: a new core knows none of them. */
  clear(): void {
    this.#recent = [];
  }
}

/** The core's side: the message lists it received, to rebuild deltas from. */
export class ReceivedMessages {
  #recent: Sent[] = [];

  /**
   * Rebuilds a request's messages and remembers them under `id`.
   *
   * @param id The count request's id.
   * @param messages The messages sent: all of them, or those after the base's kept ones.
   * @param base The base the client named, if any.
   * @returns The whole list, or `undefined` when the base is not remembered
   * (nothing is recorded then).
   */
  resolve(
    id: number,
    messages: readonly unknown[],
    base: DeltaBase | undefined,
  ): unknown[] | undefined {
    let whole: unknown[];
    if (base === undefined) whole = [...messages];
    else {
      const found = this.#recent.find((sent) => sent.id === base.id);
      if (found === undefined || found.messages.length < base.keep) {
        return undefined;
      }
      whole = found.messages.slice(0, base.keep).concat(messages);
    }
    this.#recent.unshift({ id, messages: whole });
    if (this.#recent.length > RECENT) this.#recent.pop();
    return whole;
  }
}
