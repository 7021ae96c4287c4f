// A JSON reader that keeps what Python's json.loads keeps and JSON.parse
// loses: object key order (integer-like keys included), integral floats,
// integers beyond 2^53 (as bigints, so they print as written), and the
// NaN / Infinity / -Infinity that Python's json.loads accepts.
import { PyFloat } from "./values.ts";

const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
const STRING = /"(?:[^"\\]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*"/y;
const SPACE = /[ \t\n\r]*/y;

/**
 * Parses JSON text as Python's `json.loads`: objects become `Map`s in source
 * order, numbers written with a fraction or an exponent that are integral
 * become `PyFloat`s, integers outside the safe range become bigints, and
 * `NaN`, `Infinity` and `-Infinity` are floats.
 *
 * @param text JSON text.
 * @returns The parsed value.
 * @throws {SyntaxError} If the text is not JSON.
 */
export function parseJsonLossless(text: string): unknown {
  let at = 0;
  const skip = () => {
    SPACE.lastIndex = at;
    SPACE.exec(text);
    at = SPACE.lastIndex;
  };
  const fail = (): never => {
    throw new SyntaxError(
      `Cannot parse JSON: unexpected input at offset ${at}`,
    );
  };
  const match = (re: RegExp): string => {
    re.lastIndex = at;
    const m = re.exec(text);
    if (m === null) return fail();
    at = re.lastIndex;
    return m[0];
  };
  const literal = (word: string, value: unknown): unknown => {
    if (!text.startsWith(word, at)) return fail();
    at += word.length;
    return value;
  };
  const list = <T>(close: string, item: () => T): T[] => {
    const out: T[] = [];
    at++;
    skip();
    if (text[at] === close) {
      at++;
      return out;
    }
    for (;;) {
      out.push(item());
      skip();
      const ch = text[at++];
      if (ch === close) return out;
      if (ch !== ",") fail();
    }
  };
  const value = (): unknown => {
    skip();
    const ch = text[at];
    if (ch === "{") {
      return new Map(list("}", () => {
        skip();
        const key = JSON.parse(match(STRING)) as string;
        skip();
        if (text[at++] !== ":") fail();
        return [key, value()] as const;
      }));
    }
    if (ch === "[") return list("]", value);
    if (ch === '"') return JSON.parse(match(STRING));
    if (ch === "t") return literal("true", true);
    if (ch === "f") return literal("false", false);
    if (ch === "n") return literal("null", null);
    if (ch === "N") return literal("NaN", new PyFloat(NaN));
    if (ch === "I") return literal("Infinity", new PyFloat(Infinity));
    if (ch === "-" && text[at + 1] === "I") {
      return literal("-Infinity", new PyFloat(-Infinity));
    }
    const source = match(NUMBER);
    const number = Number(source);
    if (!/[.eE]/.test(source)) {
      return Number.isSafeInteger(number) ? number : BigInt(source);
    }
    return Number.isInteger(number) ? new PyFloat(number) : number;
  };
  const result = value();
  skip();
  if (at !== text.length) fail();
  return result;
}
