/**
 * The ids of a chat render, encoded segment by segment with the segments'
 * ids kept: a conversation that grew by a turn renders to the same segments
 * (the text between added tokens, and the added tokens) plus new ones, so
 * only the new ones are encoded. `/tokenize` must return every id, so the
 * counts the prefix counter keeps are not enough.
 *
 * Exact where `isSegmentationSafe` holds and no special tokens are added
 * around the whole: the tokenizer itself splits a text at its added tokens
 * before normalising, pre-tokenising and merging each segment on its own.
 *
 * @module
 */
import type { LocalTokenizer } from "../tokenizer/tokenizer.ts";
import { splitAtAddedTokens } from "./segments.ts";

/** How many ids the memo of one tokenizer holds at most, over both generations. */
const MAX_IDS = 2_000_000;

/** Segment ids of one tokenizer, in two generations: the newer fills, the older is dropped whole. */
export class SegmentIds {
  readonly #tokenizer: Pick<LocalTokenizer, "addedTokens" | "encode">;
  #current = new Map<string, readonly number[]>();
  #currentIds = 0;
  #old = new Map<string, readonly number[]>();

  /** @param tokenizer The tokenizer: its added tokens and its encoding. */
  constructor(tokenizer: Pick<LocalTokenizer, "addedTokens" | "encode">) {
    this.#tokenizer = tokenizer;
  }

  /**
   * The ids of `text`, no special tokens added: what
   * `encode(text, { addSpecialTokens: false })` returns.
   *
   * @param text A render.
   * @returns Its ids.
   */
  encode(text: string): number[] {
    const ids: number[] = [];
    for (
      const { text: segment } of splitAtAddedTokens(
        text,
        this.#tokenizer.addedTokens,
      )
    ) {
      const kept = this.#ids(segment);
      for (let i = 0; i < kept.length; i++) ids.push(kept[i]!);
    }
    return ids;
  }

  #ids(segment: string): readonly number[] {
    // Every segment is kept, the added tokens and the short joins between
    // messages too: a lookup costs less than the tokenizer's call.
    const current = this.#current.get(segment);
    if (current !== undefined) return current;
    const ids = this.#old.get(segment) ??
      this.#tokenizer.encode(segment, { addSpecialTokens: false });
    if (this.#currentIds + ids.length > MAX_IDS / 2) {
      this.#old = this.#current;
      this.#current = new Map();
      this.#currentIds = 0;
    }
    this.#current.set(segment, ids);
    this.#currentIds += ids.length;
    return ids;
  }
}
