/**
 * A small tiktoken vocabulary of the tests' own and an independent
 * reference of tiktoken's merge, both in Python (stdlib only): the
 * vocabulary is trained by plain BPE on a short corpus (the 256 bytes,
 * then each most frequent adjacent pair), and the reference is tiktoken's
 * `_byte_pair_merge` as its Rust source states it, the full rescan for the
 * lowest rank, leftmost of equals, after each merge.
 *
 * @module
 */

const PYTHON = String.raw`
import base64, json, sys
MAX = float("inf")

def train(corpus, merges):
    ranks = {bytes([b]): b for b in range(256)}
    words = [[bytes([b]) for b in w.encode()] for w in corpus.split(" ")]
    for _ in range(merges):
        counts = {}
        for w in words:
            for a, b in zip(w, w[1:]):
                counts[(a, b)] = counts.get((a, b), 0) + 1
        if not counts:
            break
        best = max(sorted(counts), key=lambda pair: counts[pair])
        ranks[best[0] + best[1]] = len(ranks)
        for w in words:
            i = 0
            while i < len(w) - 1:
                if (w[i], w[i + 1]) == best:
                    w[i:i + 2] = [best[0] + best[1]]
                else:
                    i += 1
    return ranks

def encode(piece, ranks):
    if piece in ranks:
        return [ranks[piece]]
    parts = [[i, ranks.get(piece[i:i + 2], MAX)] for i in range(len(piece) - 1)]
    parts += [[len(piece) - 1, MAX], [len(piece), MAX]]
    def rank(i):
        return ranks.get(piece[parts[i][0]:parts[i + 3][0]], MAX) if i + 3 < len(parts) else MAX
    while True:
        m = min(range(len(parts) - 1), key=lambda i: (parts[i][1], i))
        if parts[m][1] == MAX:
            break
        if m > 0:
            parts[m - 1][1] = rank(m - 1)
        parts[m][1] = rank(m)
        del parts[m + 1]
    return [ranks[piece[parts[i][0]:parts[i + 1][0]]] for i in range(len(parts) - 1)]

job = json.load(sys.stdin)
ranks = train(job["corpus"], job["merges"])
model = "".join(base64.b64encode(t).decode() + " " + str(r) + "\n" for t, r in ranks.items())
ids = [encode(bytes(p), ranks) for p in job["pieces"]]
json.dump({"model": model, "ids": ids}, sys.stdout)
`;

/** What Python trained and encoded. */
export interface Reference {
  /** The text of the vocabulary's `tiktoken.model`. */
  readonly model: string;
  /** Each piece's ids by the reference merge. */
  readonly ids: number[][];
}

/**
 * Trains a vocabulary on `corpus` and encodes each piece (UTF-8 bytes)
 * with the reference.
 *
 * @param corpus The training text, its words cut at spaces.
 * @param merges How many merges to learn.
 * @param pieces The pieces to encode, each a byte array.
 * @returns The vocabulary file's text and the ids.
 */
export async function pythonReference(
  corpus: string,
  merges: number,
  pieces: readonly number[][],
): Promise<Reference> {
  const child = new Deno.Command("/usr/bin/python3", {
    args: ["-c", PYTHON],
    stdin: "piped",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const writer = child.stdin.getWriter();
  await writer.write(
    new TextEncoder().encode(JSON.stringify({ corpus, merges, pieces })),
  );
  await writer.close();
  const output = await child.output();
  if (!output.success) throw new Error("the Python reference failed");
  return JSON.parse(new TextDecoder().decode(output.stdout)) as Reference;
}
