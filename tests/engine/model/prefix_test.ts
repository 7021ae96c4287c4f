// What PrefixCounter splits and counts again as conversations grow and
// branch: only what each render added, each conversation continuing from
// its own previous render, with every count equal to a fresh split's.
import { deepStrictEqual, strictEqual } from "node:assert/strict";
import { PrefixCounter } from "../../../packages/engine/src/model/prefix.ts";
import { splitAtAddedTokens } from "../../../packages/engine/src/model/segments.ts";

const addedTokens = Object.freeze(["<m>"]);

/** A store that keeps nothing: every piece split again is counted again. */
const forgetful = { get: () => undefined, set: () => {} };

/** A tokenizer whose count of a piece is its length, that notes each piece it counts. */
function countingTokenizer() {
  const counted: string[] = [];
  return {
    counted,
    tokenizer: {
      addedTokens,
      count: (piece: string) => {
        counted.push(piece);
        return piece.length;
      },
    },
  };
}

function expected(text: string): number {
  return splitAtAddedTokens(text, addedTokens).reduce(
    (sum, piece) => sum + (piece.added ? 1 : piece.text.length),
    0,
  );
}

/** A conversation of `n` messages, each an added token and its text. */
function conversation(name: string, n: number, from = 0): string {
  let text = "";
  for (let i = from; i < from + n; i++) text += `<m>${name} ${i}`;
  return text;
}

Deno.test("PrefixCounter.count() tokenizes only what a grown render added", () => {
  const { counted, tokenizer } = countingTokenizer();
  const counter = new PrefixCounter(tokenizer, "sha", forgetful);
  let text = conversation("x", 200);
  strictEqual(counter.count(`${text}<m>prompt`), expected(`${text}<m>prompt`));
  for (let turn = 0; turn < 5; turn++) {
    counted.length = 0;
    // The render of the previous turn ended in a generation prompt that
    // the next one renders after its new message instead.
    const grown = `${text}<m>x new ${turn}<m>prompt`;
    strictEqual(counter.count(grown), expected(grown));
    deepStrictEqual(counted, [`x new ${turn}`, "prompt"]);
    text = `${text}<m>x new ${turn}`;
  }
});

Deno.test("PrefixCounter.count() keeps two conversations that branch from one long prefix apart", () => {
  const { counted, tokenizer } = countingTokenizer();
  const counter = new PrefixCounter(tokenizer, "sha", forgetful);
  const shared = conversation("shared", 100);
  let x = shared + conversation("x", 100);
  let y = shared + conversation("y", 100);
  const prompt = "<m>prompt";
  strictEqual(counter.count(x + prompt), expected(x + prompt));
  strictEqual(counter.count(y + prompt), expected(y + prompt));
  for (let turn = 0; turn < 4; turn++) {
    // Turns interleave; each tokenizes only its own new message.
    for (const [name, text] of [["x", x], ["y", y]] as const) {
      counted.length = 0;
      const grown = `${text}<m>${name} turn ${turn}`;
      strictEqual(counter.count(grown + prompt), expected(grown + prompt));
      deepStrictEqual(counted, [`${name} turn ${turn}`, "prompt"]);
      if (name === "x") x = grown;
      else y = grown;
    }
  }
  // An earlier render of one, counted again, still counts exactly.
  const earlier = shared + conversation("x", 100);
  strictEqual(counter.count(earlier), expected(earlier));
});
