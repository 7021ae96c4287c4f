/**
 * The "did you mean" of a mistyped name: the known name closest to it in
 * edits, when it is close enough to be a typo.
 *
 * @module
 */

/**
 * The candidate closest to `name` by optimal string alignment distance
 * (insertions, deletions, substitutions and swaps of two neighbours, case
 * ignored), if it is within a third of the longer name's length (at least
 * one edit). Ties go to the earlier candidate.
 *
 * @param name The name given.
 * @param candidates The known names.
 * @returns The suggestion, or `undefined` when none is close.
 */
export function nearestName(
  name: string,
  candidates: readonly string[],
): string | undefined {
  const given = name.toLowerCase();
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const candidate of candidates) {
    const distance = editDistance(given, candidate.toLowerCase());
    const allowed = Math.max(
      1,
      Math.floor(Math.max(given.length, candidate.length) / 3),
    );
    if (distance <= allowed && distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  return best;
}

/** The optimal string alignment distance between `a` and `b`. */
function editDistance(a: string, b: string): number {
  const rows = Array.from(
    { length: a.length + 1 },
    (_, i) => Array.from({ length: b.length + 1 }, (_, j) => i === 0 ? j : i),
  );
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      const row = rows[i]!;
      const above = rows[i - 1]!;
      row[j] = Math.min(above[j]! + 1, row[j - 1]! + 1, above[j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        row[j] = Math.min(row[j]!, rows[i - 2]![j - 2]! + 1);
      }
    }
  }
  return rows[a.length]![b.length]!;
}
