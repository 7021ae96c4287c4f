/**
 * Varied prose-like text for the local counting benchmarks: seeded, so runs
 * compare, and fresh from word to word (common words mixed with invented
 * ones and numbers), so a tokenizer's word cache does not flatter it the way
 * repeated text would.
 *
 * @module
 */

const COMMON = (
  "the of and to in is that for it as with was on be by this are from at or " +
  "an have not but which they one all their there can more has been were " +
  "when will would about into than other some these could time its only " +
  "model request budget window token count server cache prompt message " +
  "system user assistant answer question because after before while where " +
  "between through during without again further then once here why how " +
  "each few most such own same very just should now first last long great " +
  "little old right big high different small large next early young " +
  "important public bad able river mountain city street garden letter " +
  "number water history morning evening kitchen window paper engine"
).split(" ");
const ONSETS =
  "b c d f g h j k l m n p r s t v w z br cl dr gr pl st tr sh ch th"
    .split(" ");
const VOWELS = "a e i o u ai ea io ou y".split(" ");
const CODAS = ["", "", "n", "r", "s", "t", "l", "nd", "st", "ck", "ng"];

/** A seeded generator of prose-like text. */
export class ProseGenerator {
  #state: number;

  /** @param seed The seed; the same seed gives the same text. */
  constructor(seed: number) {
    this.#state = seed >>> 0;
  }

  /** mulberry32 */
  #next(): number {
    let t = (this.#state = (this.#state + 0x6d2b79f5) >>> 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  #pick<T>(list: readonly T[]): T {
    return list[Math.floor(this.#next() * list.length)]!;
  }

  #word(): string {
    const roll = this.#next();
    if (roll < 0.03) return String(Math.floor(this.#next() * 100000));
    if (roll < 0.7) return this.#pick(COMMON);
    let word = "";
    const syllables = 1 + Math.floor(this.#next() * 3);
    for (let i = 0; i < syllables; i++) {
      word += this.#pick(ONSETS) + this.#pick(VOWELS);
    }
    return word + this.#pick(CODAS);
  }

  /**
   * Paragraphs of sentences, at least `chars` characters long.
   *
   * @param chars The least length.
   * @returns The text.
   */
  text(chars: number): string {
    const parts: string[] = [];
    let length = 0;
    while (length < chars) {
      const words = 6 + Math.floor(this.#next() * 18);
      let sentence = "";
      for (let i = 0; i < words; i++) {
        let word = this.#word();
        if (i === 0) word = word[0]!.toUpperCase() + word.slice(1);
        sentence += (i === 0 ? "" : this.#next() < 0.08 ? ", " : " ") + word;
      }
      sentence += this.#pick([".", ".", ".", "?", "!", ";"]);
      const separator = parts.length === 0
        ? ""
        : this.#next() < 0.15
        ? "\n\n"
        : " ";
      parts.push(separator + sentence);
      length += separator.length + sentence.length;
    }
    return parts.join("");
  }
}
