// commonPrefixLength() equals a loop over code units, for texts that differ
// anywhere, around and across the spans it compares at once.
import { strictEqual } from "node:assert/strict";
import { commonPrefixLength } from "../../../packages/engine/src/common/common_prefix.ts";
import { mulberry32 } from "../../_kit/prng.ts";

function byUnits(a: string, b: string): number {
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  return i;
}

Deno.test("commonPrefixLength() equals a loop over code units", () => {
  const random = mulberry32(42);
  const base = Array.from(
    { length: 200_000 },
    () => "ab\u00e9\ud83d\ude00"[Math.floor(random() * 5)],
  ).join("");
  const lengths = [0, 1, 2, 63, 64, 65, 65535, 65536, 65537, 131072, 199_999];
  for (const at of lengths) {
    for (const length of [at, at + 1, 200_000]) {
      // The same text, cut, or with one unit changed at `at`.
      const cut = base.slice(0, length);
      const changed = at < base.length
        ? base.slice(0, at) + "z" + base.slice(at + 1)
        : base;
      for (const other of [cut, changed]) {
        strictEqual(commonPrefixLength(base, other), byUnits(base, other));
        strictEqual(commonPrefixLength(other, base), byUnits(other, base));
      }
    }
  }
});
