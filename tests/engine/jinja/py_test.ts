import { strictEqual } from "node:assert/strict";
import { BOTH, pyStrip } from "../../../packages/engine/src/jinja/py.ts";

/** The obvious reading of Python's strip over code points, as a reference. */
function referenceStrip(
  text: string,
  chars: string | null,
  left: boolean,
  right: boolean,
): string {
  const drop = new Set(
    Array.from(
      chars ??
        "\t\n\v\f\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000",
    ),
  );
  const points = Array.from(text);
  let start = 0;
  let end = points.length;
  while (left && start < end && drop.has(points[start]!)) start++;
  while (right && end > start && drop.has(points[end - 1]!)) end--;
  return points.slice(start, end).join("");
}

// Astral characters, lone surrogates of both kinds, Python-only whitespace.
const ALPHABET = [
  " ",
  "\t",
  "\n",
  "\x85",
  "\u3000",
  "a",
  "*",
  "😀",
  "\ud83d",
  "\ude00",
  "é",
  "x",
];

function randomText(next: () => number, length: number): string {
  let text = "";
  for (let i = 0; i < length; i++) {
    text += ALPHABET[Math.floor(next() * ALPHABET.length)];
  }
  return text;
}

Deno.test("pyStrip() strips code points from each end as Python does", () => {
  let seed = 20261130;
  const next = () => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return seed / 2147483648;
  };
  const charSets = [
    null,
    "*",
    "😀",
    "\ude00",
    "\ud83d",
    "a😀 ",
    "\ud83d\ude00x",
  ];
  for (let i = 0; i < 5000; i++) {
    const text = randomText(next, Math.floor(next() * 12));
    const chars = charSets[i % charSets.length]!;
    for (const [left, right] of [[true, true], [true, false], [false, true]]) {
      strictEqual(
        pyStrip(text, chars, { left: left!, right: right! }),
        referenceStrip(text, chars, left!, right!),
        JSON.stringify({ text, chars, left, right }),
      );
    }
  }
});

Deno.test("pyStrip() returns the same string when nothing is stripped", () => {
  const text = "no edges";
  strictEqual(pyStrip(text, null, BOTH), text);
  strictEqual(pyStrip("  both  ", null, BOTH), "both");
  strictEqual(pyStrip("😀x😀", "😀", { left: true, right: false }), "x😀");
});
