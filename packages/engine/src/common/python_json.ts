/**
 * JSON text as Python's `json` module reads and writes it (vLLM reads
 * request bodies with `json.loads`): JSON's grammar plus the values `NaN`,
 * `Infinity` and `-Infinity`, which `JSON.parse` refuses and
 * `JSON.stringify` writes as `null`. Bodies without them take
 * `JSON.parse` and `JSON.stringify` alone.
 *
 * @module
 */

/** A JSON text parsed as `json.loads` parses it. */
export interface ParsedJson {
  /** The value, as `JSON.parse` would build it, the constants as numbers. */
  readonly value: unknown;
  /** Whether the text holds `NaN`, `Infinity` or `-Infinity` as a value. */
  readonly constants: boolean;
}

/**
 * Parses `text` as Python's `json.loads` does (its C scanner): what
 * `JSON.parse` reads, and the three constants wherever a value may stand.
 *
 * @param text The decoded body.
 * @returns The value, as `JSON.parse` would build it, the constants as numbers.
 * @throws {SyntaxError} If Python refuses the text too.
 */
export function parseJson(text: string): ParsedJson {
  try {
    return { value: JSON.parse(text), constants: false };
  } catch {
    // Only a text JSON.parse refuses can hold a constant.
    return parseWithConstants(text);
  }
}

/**
 * Writes `value` as `JSON.stringify` does, except that `NaN`, `Infinity`
 * and `-Infinity` are written so (as `json.dumps` writes them) instead of
 * as `null`, so that Python reads the values that were parsed.
 *
 * @param value A value built from JSON.
 * @returns The text, or undefined where `JSON.stringify` returns it.
 * @throws {RangeError} If the value nests too deeply to write.
 * @throws {TypeError} If a string of the value is the mark a constant is
 * written through, or where `JSON.stringify` throws.
 */
export function stringifyJson(value: unknown): string | undefined {
  const json = JSON.stringify(value);
  // JSON.stringify writes each constant as null: no null, no constant.
  if (json === undefined || !json.includes("null") || !holdsConstant(value)) {
    return json;
  }
  let marked = 0;
  const written = JSON.stringify(value, (_key, item: unknown) => {
    if (typeof item !== "number" || Number.isFinite(item)) return item;
    marked++;
    return `${MARK}${item}`;
  });
  let found = 0;
  const restored = written.replace(MARKED, (_match, constant: string) => {
    found++;
    return constant;
  });
  // A string of the value spelled a mark: its text would change.
  if (found !== marked) {
    throw new TypeError(
      "Cannot write the JSON text as one of its strings is the mark of a constant",
    );
  }
  return restored;
}

/** A constant is written as this string, then unquoted: U+0000 is escaped in JSON text. */
const MARK = "\u0000incontext:";
const MARKED = /"\\u0000incontext:(NaN|-?Infinity)"/g;

/** Whether a value built from JSON holds NaN or an infinity. */
function holdsConstant(value: unknown): boolean {
  // A stack, not recursion: the value may nest deeper than the call stack.
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const item = stack.pop();
    if (typeof item === "number") {
      if (!Number.isFinite(item)) return true;
    } else if (typeof item === "object" && item !== null) {
      for (const child of Object.values(item)) {
        if (typeof child === "object" || typeof child === "number") {
          stack.push(child);
        }
      }
    }
  }
  return false;
}

type Frame =
  | { readonly items: unknown[] }
  | { readonly object: Record<string, unknown>; key: string };

/** Returned by `Scanner.value()` once it opened a container with members. */
const OPENED = Symbol("opened");

/**
 * The parse of a text `JSON.parse` refused: a loop over a stack of open
 * containers, not recursion, so any depth `JSON.parse` reads is read.
 */
function parseWithConstants(text: string): ParsedJson {
  const scan = new Scanner(text);
  const stack: Frame[] = [];
  for (;;) {
    let value = scan.value(stack);
    if (value === OPENED) continue;
    for (let frame = stack.at(-1); frame !== undefined; frame = stack.at(-1)) {
      if ("items" in frame) frame.items.push(value);
      else setMember(frame.object, frame.key, value);
      if (scan.next(frame)) break;
      stack.pop();
      value = "items" in frame ? frame.items : frame.object;
    }
    if (stack.length === 0) {
      scan.end();
      return { value, constants: scan.constants };
    }
  }
}

/** Sets a member as `JSON.parse` does: `__proto__` as an own property too. */
function setMember(
  object: Record<string, unknown>,
  key: string,
  value: unknown,
): void {
  if (key !== "__proto__") object[key] = value;
  else {
    Object.defineProperty(object, key, {
      value,
      writable: true,
      enumerable: true,
      configurable: true,
    });
  }
}

const SPACE = /[ \t\n\r]*/y;
const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?/y;
const WORDS: readonly (readonly [string, unknown])[] = [
  ["true", true],
  ["false", false],
  ["null", null],
  ["NaN", NaN],
  ["Infinity", Infinity],
  ["-Infinity", -Infinity],
];

/** Reads tokens where CPython's `scan_once` reads them. */
class Scanner {
  readonly #text: string;
  #at = 0;
  /** Whether a constant was read. */
  constants = false;

  constructor(text: string) {
    this.#text = text;
  }

  /** A value, or {@linkcode OPENED} once a container with members is pushed. */
  value(stack: Frame[]): unknown {
    this.#space();
    const open = this.#text[this.#at];
    if (open === "{" || open === "[") {
      this.#at++;
      this.#space();
      if (this.#text[this.#at] === (open === "{" ? "}" : "]")) {
        this.#at++;
        return open === "{" ? {} : [];
      }
      stack.push(
        open === "{" ? { object: {}, key: this.#key() } : {
          items: [],
        },
      );
      return OPENED;
    }
    return open === '"' ? this.#string() : this.#word();
  }

  /** After a member: true when another follows (its key read), false when the container closes. */
  next(frame: Frame): boolean {
    this.#space();
    const char = this.#text[this.#at++];
    if (char === ",") {
      if ("object" in frame) {
        this.#space();
        frame.key = this.#key();
      }
      return true;
    }
    if (char !== ("items" in frame ? "]" : "}")) this.#fail();
    return false;
  }

  /** Nothing but whitespace may follow the value. */
  end(): void {
    this.#space();
    if (this.#at !== this.#text.length) this.#fail();
  }

  #key(): string {
    if (this.#text[this.#at] !== '"') this.#fail();
    const key = this.#string();
    this.#space();
    if (this.#text[this.#at++] !== ":") this.#fail();
    return key;
  }

  /** A string, its escapes and characters checked by `JSON.parse`, as Python checks them. */
  #string(): string {
    const text = this.#text;
    for (let quote = text.indexOf('"', this.#at + 1); quote !== -1;) {
      let slashes = 0;
      while (text.charCodeAt(quote - 1 - slashes) === 0x5c) slashes++;
      if (slashes % 2 === 0) {
        const value = JSON.parse(text.slice(this.#at, quote + 1)) as string;
        this.#at = quote + 1;
        return value;
      }
      quote = text.indexOf('"', quote + 1);
    }
    return this.#fail();
  }

  #word(): unknown {
    for (const [word, value] of WORDS) {
      if (this.#text.startsWith(word, this.#at)) {
        this.#at += word.length;
        if (typeof value === "number") this.constants = true;
        return value;
      }
    }
    NUMBER.lastIndex = this.#at;
    const literal = NUMBER.exec(this.#text)?.[0] ?? this.#fail();
    this.#at += literal.length;
    return Number(literal);
  }

  #space(): void {
    SPACE.lastIndex = this.#at;
    SPACE.test(this.#text);
    this.#at = SPACE.lastIndex;
  }

  #fail(): never {
    throw new SyntaxError(
      `Cannot parse the JSON text: unexpected input at offset ${this.#at}`,
    );
  }
}
