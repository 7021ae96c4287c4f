/**
 * The host's own copies of the payloads it counts for a caller that keeps
 * its objects (a host on the caller's thread): a message or tool equal to
 * the copy kept from an earlier count renders from that copy, so that its
 * template value and its loop output are reused, as the count worker reuses
 * its structured clones. A caller that changes its objects after a count
 * changes nothing kept: a changed message no longer equals its copy, and a
 * new copy is made.
 *
 * @module
 */
import { plainCopy, PlainShapes } from "../common/plain_copy.ts";

/** How many lists of each kind are kept: a few conversations interleaved still find theirs. */
const RECENT = 4;

/** A list adopted: the copies, and the shapes the caller's items are compared with. */
interface Owned {
  readonly copies: unknown[];
  readonly shapes: PlainShapes;
}

/** The copies of the last few lists adopted. */
class OwnedLists {
  #recent: Owned[] = [];

  /**
   * The host's copy of `list`: the copies of the longest prefix it shares
   * with a kept list, then copies of the rest; `undefined` when an item is
   * not plain JSON-like data.
   */
  adopt(list: readonly unknown[]): unknown[] | undefined {
    let best: Owned | undefined;
    let keep = 0;
    for (const owned of this.#recent) {
      // No shorter list can share more.
      if (owned.shapes.length <= keep) continue;
      const shared = owned.shapes.sharedPrefix(list);
      if (shared > keep) {
        keep = shared;
        best = owned;
      }
      if (shared === list.length) break;
    }
    // A list the new one holds whole is not kept twice: the new one takes
    // its shapes over; another, branched off, keeps its own.
    const superseded = best !== undefined && keep === best.copies.length
      ? best
      : undefined;
    const copies = best === undefined ? [] : best.copies.slice(0, keep);
    const shapes = superseded?.shapes ?? best?.shapes.slice(keep) ??
      new PlainShapes();
    for (let i = keep; i < list.length; i++) {
      if (!shapes.push(list[i])) {
        shapes.truncate(keep);
        return undefined;
      }
      copies.push(plainCopy(list[i]));
    }
    this.#recent = [
      { copies, shapes },
      ...this.#recent.filter((owned) => owned !== superseded),
    ].slice(0, RECENT);
    return copies;
  }
}

/** A host's copies of the messages and tools of the payloads it counted. */
export class OwnedPayloads {
  readonly #messages = new OwnedLists();
  readonly #tools = new OwnedLists();

  /**
   * `payload` with its `messages` and `tools` replaced by the host's own
   * copies, or `undefined` when they are not lists of plain JSON-like data
   * (the payload then renders as given, reusing nothing).
   *
   * @param payload A `/tokenize` chat payload, never changed.
   * @returns The payload over the host's copies.
   */
  adopt(
    payload: Record<string, unknown>,
  ): Record<string, unknown> | undefined {
    const { messages, tools } = payload;
    if (!Array.isArray(messages)) return undefined;
    const ownMessages = this.#messages.adopt(messages);
    if (ownMessages === undefined) return undefined;
    if (tools === undefined || tools === null) {
      return { ...payload, messages: ownMessages };
    }
    if (!Array.isArray(tools)) return undefined;
    const ownTools = this.#tools.adopt(tools);
    if (ownTools === undefined) return undefined;
    return { ...payload, messages: ownMessages, tools: ownTools };
  }
}
