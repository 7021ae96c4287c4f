/**
 * Incremental counting that skips the unchanged start of a render: a
 * conversation that grows by one message renders to the previous text plus
 * a tail, so the pieces (between added tokens) of the shared prefix keep the
 * counts already found, and only the rest is split, hashed and looked up;
 * the kept pieces are not copied either, so a turn costs what it added.
 * New pieces are counted once and kept in a {@linkcode PieceStore} (the count
 * cache's LRU) under a hash of the tokenizer's SHA-256 and the piece's text.
 *
 * Exact for tokenizers that `isSegmentationSafe` accepts: the sum of the
 * pieces' counts is the count of the whole text.
 *
 * @module
 */
import { createHash } from "node:crypto";
import type { LocalTokenizer } from "../tokenizer/tokenizer.ts";
import { splitterFor } from "./segments.ts";
import { lineChunkEnds } from "./line_chunks.ts";
import { commonPrefixLength } from "../common/common_prefix.ts";

/** Where piece counts are kept, by key. */
export interface PieceStore {
  /** A piece's count, or undefined. */
  get(key: string): number | undefined;
  /** Keeps a piece's count. */
  set(key: string, count: number): void;
}

/**
 * Pieces of renders that extend one another: where each piece ends,
 * whether it is an added token, the running total. A render keeps the first
 * `n` rows of a table; a render that grows from it appends to the same
 * table, so a turn costs its new pieces, not a copy of every earlier one.
 */
interface PieceTable {
  readonly starts: number[];
  readonly ends: number[];
  readonly added: boolean[];
  readonly totals: number[];
}

/** A render: its text in the parts it came in, and the first `n` rows of its table. */
interface Render {
  readonly parts: readonly string[];
  /** Where each part ends in the text. */
  readonly partEnds: readonly number[];
  readonly length: number;
  readonly table: PieceTable;
  readonly n: number;
}

/** Renders remembered per tokenizer: a few conversations interleaved still reuse their prefixes. */
const RECENT_RENDERS = 4;
/**
 * The most pieces a render may drop from the one it grew from and still
 * take over its table: a turn drops the generation prompt and what the
 * template renders differently in the last message (a few pieces each).
 */
const GROWN_DROPS = 64;

/**
 * The length of the common prefix of a remembered render's text and a
 * text given in parts, and how many first parts they share: parts equal
 * at the same place (most often the very same string, compared without
 * reading it), then the common prefix of the first two that differ. Never
 * more than the texts' true common prefix; less only where parts split
 * differently.
 */
function commonPrefixOfParts(
  render: Render,
  parts: readonly string[],
): { readonly length: number; readonly parts: number } {
  const a = render.parts;
  const n = Math.min(a.length, parts.length);
  let i = 0;
  // `Object.is` tells the same string without reading it, as `===` would.
  while (i < n && Object.is(a[i], parts[i])) i++;
  const length = i === 0 ? 0 : render.partEnds[i - 1]!;
  return {
    length: i < n ? length + commonPrefixLength(a[i]!, parts[i]!) : length,
    parts: i,
  };
}

/** The text of `parts` (ending at `ends`) from `position` on. */
function textFrom(
  parts: readonly string[],
  ends: readonly number[],
  position: number,
): string {
  // The first part ending after the position.
  let low = 0;
  let high = parts.length;
  while (low < high) {
    const middle = (low + high) >> 1;
    if (ends[middle]! <= position) low = middle + 1;
    else high = middle;
  }
  if (low === parts.length) return "";
  const start = low === 0 ? 0 : ends[low - 1]!;
  const head = parts[low]!.slice(position - start);
  return low + 1 === parts.length ? head : head + parts.slice(low + 1).join("");
}

/** A render's count: the running total of its last piece. */
function total(render: Render): number {
  return render.n === 0 ? 0 : render.table.totals[render.n - 1]!;
}

/** Counts renders of one tokenizer piece by piece, reusing the previous renders' prefixes. */
export class PrefixCounter {
  readonly #tokenizer: Pick<LocalTokenizer, "addedTokens" | "count">;
  readonly #keyPrefix: string;
  readonly #store: PieceStore;
  readonly #splitter: RegExp | null;
  /** An added-token match starting this far before a change may differ after it. */
  readonly #longestAdded: number;
  readonly #lineChunks: boolean;
  #recent: Render[] = [];

  /**
   * @param tokenizer The tokenizer: its added tokens and its count.
   * @param tokenizerSha256 Joins every piece's key, so tokenizers never share counts.
   * @param store Where piece counts are kept.
   * @param options `lineChunks`: cut pieces into line chunks too (only for
   * tokenizers `isLineChunkSafe` accepts).
   */
  constructor(
    tokenizer: Pick<LocalTokenizer, "addedTokens" | "count">,
    tokenizerSha256: string,
    store: PieceStore,
    options: { readonly lineChunks?: boolean } = {},
  ) {
    this.#tokenizer = tokenizer;
    this.#lineChunks = options.lineChunks === true;
    this.#keyPrefix = `${tokenizerSha256}\0`;
    this.#store = store;
    this.#splitter = splitterFor(tokenizer.addedTokens);
    this.#longestAdded = tokenizer.addedTokens.reduce(
      (longest, token) => Math.max(longest, token.length),
      0,
    );
  }

  /**
   * Counts a render without special tokens.
   *
   * @param render The render's text, or its parts (joined, the text): a
   * render whose parts are the same strings as an earlier render's is
   * compared part by part, without joining them.
   * @returns Its token count.
   */
  count(render: string | readonly string[]): number {
    const parts = typeof render === "string" ? [render] : render;
    const base = this.#closest(parts);
    // The ends of the parts shared with the closest render are its own:
    // only the other parts are read.
    const partEnds = base === undefined
      ? []
      : base.render.partEnds.slice(0, base.parts);
    let length = partEnds.length === 0 ? 0 : partEnds[partEnds.length - 1]!;
    for (let i = partEnds.length; i < parts.length; i++) {
      length += parts[i]!.length;
      partEnds.push(length);
    }
    if (base !== undefined) {
      if (base.common === length && base.render.length === length) {
        this.#remember(base.render);
        return total(base.render);
      }
    }
    const kept = base === undefined
      ? 0
      : this.#keptPieces(base.render, base.common);
    const table = kept === 0
      ? { starts: [], ends: [], added: [], totals: [] }
      : this.#tableFor(base!.render, kept);
    let sum = kept === 0 ? 0 : table.totals[kept - 1]!;
    // Only the text after the kept pieces is split (and joined, if parts).
    const offset = kept === 0 ? 0 : table.ends[kept - 1]!;
    const text = textFrom(parts, partEnds, offset);
    const push = (start: number, end: number, added: boolean): void => {
      sum += added ? 1 : this.#pieceCount(text.slice(start, end));
      table.starts.push(offset + start);
      table.ends.push(offset + end);
      table.added.push(added);
      table.totals.push(sum);
    };
    let at = 0;
    const splitter = this.#splitter;
    if (splitter !== null) {
      splitter.lastIndex = 0;
      for (let match; (match = splitter.exec(text)) !== null;) {
        if (match.index > at) push(at, match.index, false);
        push(match.index, splitter.lastIndex, true);
        at = splitter.lastIndex;
      }
    }
    if (at < text.length) push(at, text.length, false);
    this.#remember({ parts, partEnds, length, table, n: table.totals.length });
    return sum;
  }

  /**
   * A table whose first `kept` rows are `base`'s, for a new render to
   * append to. A render that grew from `base` (it drops no more than a turn
   * drops: the generation prompt, the last message's tail) takes `base`'s
   * own table, cut back to `kept` rows, and `base` is forgotten: the new
   * render holds all of it that can still be kept. Otherwise (a branch, an
   * edit far back) the rows are copied and `base` stays, so that two
   * conversations sharing a prefix each keep their own. Each table belongs
   * to one remembered render, so no remembered render's rows ever change.
   */
  #tableFor(base: Render, kept: number): PieceTable {
    const table = base.table;
    if (base.n - kept <= GROWN_DROPS) {
      this.#recent = this.#recent.filter((other) => other !== base);
      table.starts.length = kept;
      table.ends.length = kept;
      table.added.length = kept;
      table.totals.length = kept;
      return table;
    }
    return {
      starts: table.starts.slice(0, kept),
      ends: table.ends.slice(0, kept),
      added: table.added.slice(0, kept),
      totals: table.totals.slice(0, kept),
    };
  }

  /** The remembered render sharing the longest prefix with `parts`. */
  #closest(
    parts: readonly string[],
  ): { render: Render; common: number; parts: number } | undefined {
    let best: { render: Render; common: number; parts: number } | undefined;
    for (const render of this.#recent) {
      // A render no longer than the best prefix found cannot share more.
      if (render.length <= (best?.common ?? 0)) continue;
      const common = commonPrefixOfParts(render, parts);
      if (common.length > (best?.common ?? 0)) {
        best = { render, common: common.length, parts: common.parts };
      }
    }
    return best;
  }

  /**
   * How many leading pieces of `render` a text sharing its first `common`
   * characters splits the same way: those through the last added token
   * whose match no character past the prefix could change (a longer token,
   * or an earlier one, would have to start within the longest token's
   * length of the change).
   */
  #keptPieces(render: Render, common: number): number {
    const { added, starts } = render.table;
    for (let i = render.n - 1; i >= 0; i--) {
      if (added[i] && starts[i]! + this.#longestAdded <= common) {
        return i + 1;
      }
    }
    return 0;
  }

  #pieceCount(piece: string): number {
    if (!this.#lineChunks) return this.#chunkCount(piece);
    let total = 0;
    let start = 0;
    for (const end of lineChunkEnds(piece)) {
      total += this.#chunkCount(piece.slice(start, end));
      start = end;
    }
    return total + this.#chunkCount(piece.slice(start));
  }

  #chunkCount(piece: string): number {
    const key = createHash("sha256").update(this.#keyPrefix).update(piece)
      .digest("base64");
    let count = this.#store.get(key);
    if (count === undefined) {
      count = this.#tokenizer.count(piece, { addSpecialTokens: false });
      this.#store.set(key, count);
    }
    return count;
  }

  #remember(render: Render): void {
    this.#recent = [
      render,
      ...this.#recent.filter((other) => other !== render),
    ].slice(0, RECENT_RENDERS);
  }
}
