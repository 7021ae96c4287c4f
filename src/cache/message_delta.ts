/**
 * A grown conversation crosses to the count worker as a delta: the messages
 * after the longest prefix it shares with one of the last few conversations
 * sent, and which one. Cloning a long conversation across the port and back
 * into objects grows with all of its messages; a delta costs only the
 * messages of one turn.
 *
 * Both sides remember the messages of the last {@linkcode RECENT} count
 * requests, in the order the port delivers them, under the request's id.
 * The client compares against each message's shape (the engine's
 * `plainShape()`: the structure as a flat list, the immutable strings
 * shared), so that a caller editing its message objects after a count
 * cannot make a stale prefix look equal. A core that lacks the
 * base (a new worker, or the sides drifted) asks for the whole payload.
 *
 * @module
 */
import { PlainShapes } from "@incontext/engine";

/** How many message lists each side remembers. */
export const RECENT = 4;
/** What a delta names: the base request's id and how many of its messages to keep. */
export interface DeltaBase {
  readonly id: number;
  readonly keep: number;
}

/**
 * A list the client sent: the shapes of its first `count` messages (as
 * many as are plain data). A later list that extends it whole appends to
 * the same shapes, which this one never reads past `count`.
 */
interface Sent {
  readonly id: number;
  readonly shapes: PlainShapes;
  readonly count: number;
}

/** A list the core received: its messages. */
interface Received {
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
      if (sent.count <= (best?.keep ?? 0)) continue;
      const keep = sent.shapes.sharedPrefix(messages, sent.count);
      if (keep > (best?.keep ?? 0)) {
        best = { id: sent.id, keep };
        bestSent = sent;
      }
      if (keep === messages.length) break;
    }
    // The shared messages equal their shapes: only the rest is taken, onto
    // the base's own shapes when nothing was added to them since.
    const shared = best?.keep ?? 0;
    const shapes = bestSent !== undefined && shared === bestSent.count &&
        shared === bestSent.shapes.length
      ? bestSent.shapes
      : bestSent?.shapes.slice(shared) ?? new PlainShapes();
    for (let i = shared; i < messages.length; i++) {
      // One that is not plain data ends the shapes: none equals it.
      if (!shapes.push(messages[i])) break;
    }
    this.#recent.unshift({ id, shapes, count: shapes.length });
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
  #recent: Received[] = [];

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
