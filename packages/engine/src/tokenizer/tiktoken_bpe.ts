/**
 * tiktoken's byte-level BPE (`src/lib.rs` of openai/tiktoken): a piece of
 * UTF-8 bytes is one token when the vocabulary holds it whole, else its
 * bytes merge pair by pair, the pair of lowest rank first and the leftmost
 * of equal ranks, until no adjacent pair is a token (`_byte_pair_merge`).
 * Bytes are held as Latin-1 strings, one character per byte.
 *
 * @module
 */
import { EngineError } from "../common/errors.ts";

/**
 * Reads a `tiktoken.model` file (tiktoken's `load_tiktoken_bpe`): one
 * `base64-bytes rank` pair a line, blank lines skipped.
 *
 * @example Read two ranks
 * ```ts
 * import { parseTiktokenRanks } from "./tiktoken_bpe.ts";
 * const ranks = parseTiktokenRanks("YQ== 0\nYg== 1\n");
 * console.assert(ranks.get("b") === 1);
 * ```
 *
 * @param text The file's text.
 * @returns Each token's bytes (Latin-1) and rank.
 * @throws {EngineError} For a line that is not a pair, or a rank given twice.
 */
export function parseTiktokenRanks(text: string): Map<string, number> {
  const ranks = new Map<string, number>();
  for (const line of text.split("\n")) {
    if (line.trim() === "") continue;
    const [token, rank, extra] = line.trim().split(" ");
    const bytes = fromBase64(token!);
    if (bytes === undefined || extra !== undefined || !/^\d+$/.test(rank!)) {
      throw new EngineError(
        "Cannot read tiktoken.model: a line is not 'base64 rank'",
      );
    }
    ranks.set(bytes, Number(rank));
  }
  return ranks;
}

function fromBase64(text: string): string | undefined {
  try {
    return atob(text);
  } catch {
    return undefined;
  }
}

/**
 * Appends the ids of one piece (a split-pattern match) as tiktoken's
 * `encode_ordinary` does.
 *
 * @param piece The piece's UTF-8 bytes as a Latin-1 string.
 * @param ranks The vocabulary.
 * @param out Where the ids go.
 * @throws {EngineError} When a byte is not in the vocabulary.
 */
export function encodePiece(
  piece: string,
  ranks: ReadonlyMap<string, number>,
  out: number[],
): void {
  const whole = ranks.get(piece);
  if (whole !== undefined) {
    out.push(whole);
    return;
  }
  const ends = mergeEnds(piece, ranks);
  for (let start = 0; start < piece.length; start = ends[start]!) {
    const id = ranks.get(piece.slice(start, ends[start]));
    if (id === undefined) {
      throw new EngineError("Cannot tokenize: tiktoken.model lacks a byte");
    }
    out.push(id);
  }
}

/**
 * The merge, kept to O(n log n) on long pieces with a heap ordered by rank
 * then start, which picks what tiktoken's scan picks: the lowest rank, the
 * leftmost of equals. `ends[s]` is the end of the part starting at `s`.
 */
function mergeEnds(
  piece: string,
  ranks: ReadonlyMap<string, number>,
): Int32Array {
  const n = piece.length;
  const ends = new Int32Array(n + 1);
  const starts = new Int32Array(n + 1);
  const rankAt = new Float64Array(n).fill(Infinity);
  const heap = new MinHeap();
  for (let i = 0; i < n; i++) {
    ends[i] = i + 1;
    starts[i + 1] = i;
  }
  const pairRank = (start: number): number => {
    const end = ends[start]!;
    return end >= n ? Infinity : ranks.get(piece.slice(start, ends[end]!)) ??
      Infinity;
  };
  const update = (start: number): void => {
    rankAt[start] = pairRank(start);
    if (rankAt[start] !== Infinity) heap.push(rankAt[start]!, start);
  };
  for (let i = 0; i < n - 1; i++) update(i);
  for (let top; (top = heap.pop()) !== undefined;) {
    const [rank, start] = top;
    // A stale entry: the part merged away, or its pair changed since.
    if (rankAt[start] !== rank || ends[start] === 0) continue;
    const gone = ends[start]!;
    ends[start] = ends[gone]!;
    ends[gone] = 0;
    if (ends[start]! <= n) starts[ends[start]!] = start;
    update(start);
    if (start > 0) update(starts[start]!);
  }
  return ends;
}

/** A binary min-heap of (rank, start), ordered by rank then start. */
class MinHeap {
  readonly #ranks: number[] = [];
  readonly #starts: number[] = [];

  push(rank: number, start: number): void {
    let i = this.#ranks.length;
    this.#ranks.push(rank);
    this.#starts.push(start);
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.#less(i, parent)) break;
      this.#swap(i, parent);
      i = parent;
    }
  }

  pop(): [number, number] | undefined {
    const size = this.#ranks.length;
    if (size === 0) return undefined;
    const top: [number, number] = [this.#ranks[0]!, this.#starts[0]!];
    this.#swap(0, size - 1);
    this.#ranks.pop();
    this.#starts.pop();
    for (let i = 0;;) {
      const left = 2 * i + 1;
      let least = i;
      if (left < size - 1 && this.#less(left, least)) least = left;
      if (left + 1 < size - 1 && this.#less(left + 1, least)) least = left + 1;
      if (least === i) break;
      this.#swap(i, least);
      i = least;
    }
    return top;
  }

  #less(a: number, b: number): boolean {
    const ra = this.#ranks[a]!, rb = this.#ranks[b]!;
    return ra < rb || ra === rb && this.#starts[a]! < this.#starts[b]!;
  }

  #swap(a: number, b: number): void {
    [this.#ranks[a], this.#ranks[b]] = [this.#ranks[b]!, this.#ranks[a]!];
    [this.#starts[a], this.#starts[b]] = [this.#starts[b]!, this.#starts[a]!];
  }
}
