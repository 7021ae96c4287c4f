/**
 * Where a JSON object's top-level members lie in its UTF-8 bytes, found
 * without decoding them: strings are skipped with a search for their
 * closing quote, nested values by their brackets. UTF-8 never puts an
 * ASCII byte inside a multi-byte character, so every quote, bracket and
 * comma found is one. The bytes must already have parsed as JSON; what
 * does not scan as a JSON object gives undefined.
 *
 * @module
 */

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const COLON = 0x3a;
const COMMA = 0x2c;

/** One top-level member: its key's bytes as written, and where its value lies. */
export interface JsonMember {
  /** The key as written, quotes included. */
  readonly rawKey: Uint8Array;
  /** The offset of the value's first byte. */
  readonly start: number;
  /** The offset just past the value's last byte. */
  readonly end: number;
}

/**
 * The top-level members of the JSON object in `bytes`, in order.
 *
 * @param bytes A JSON object's UTF-8 bytes, known to parse.
 * @returns Its members, or undefined when the bytes do not scan as an object.
 */
export function jsonMembers(bytes: Uint8Array): JsonMember[] | undefined {
  let at = skipSpace(bytes, 0);
  if (bytes[at] !== OPEN_OBJECT) return undefined;
  at = skipSpace(bytes, at + 1);
  const members: JsonMember[] = [];
  if (bytes[at] === CLOSE_OBJECT) return members;
  for (;;) {
    if (bytes[at] !== QUOTE) return undefined;
    const keyEnd = stringEnd(bytes, at);
    if (keyEnd < 0) return undefined;
    const rawKey = bytes.subarray(at, keyEnd);
    at = skipSpace(bytes, keyEnd);
    if (bytes[at] !== COLON) return undefined;
    const start = skipSpace(bytes, at + 1);
    const end = valueEnd(bytes, start);
    if (end < 0) return undefined;
    members.push({ rawKey, start, end });
    at = skipSpace(bytes, end);
    if (bytes[at] === CLOSE_OBJECT) return members;
    if (bytes[at] !== COMMA) return undefined;
    at = skipSpace(bytes, at + 1);
  }
}

function isSpace(byte: number | undefined): boolean {
  return byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09;
}

function skipSpace(bytes: Uint8Array, at: number): number {
  while (isSpace(bytes[at])) at++;
  return at;
}

/** The offset past the string whose opening quote is at `at`, or -1. */
function stringEnd(bytes: Uint8Array, at: number): number {
  let from = at + 1;
  for (;;) {
    const quote = bytes.indexOf(QUOTE, from);
    if (quote < 0) return -1;
    let slashes = 0;
    while (bytes[quote - 1 - slashes] === BACKSLASH) slashes++;
    // An even run of backslashes escapes itself, not the quote.
    if (slashes % 2 === 0) return quote + 1;
    from = quote + 1;
  }
}

/** The offset past the value that begins at `at`, or -1. */
function valueEnd(bytes: Uint8Array, at: number): number {
  const first = bytes[at];
  if (first === QUOTE) return stringEnd(bytes, at);
  if (first === OPEN_OBJECT || first === OPEN_ARRAY) {
    let depth = 0;
    while (at < bytes.length) {
      const byte = bytes[at]!;
      if (byte === QUOTE) {
        at = stringEnd(bytes, at);
        if (at < 0) return -1;
        continue;
      }
      if (byte === OPEN_OBJECT || byte === OPEN_ARRAY) depth++;
      else if (byte === CLOSE_OBJECT || byte === CLOSE_ARRAY) {
        if (--depth === 0) return at + 1;
      }
      at++;
    }
    return -1;
  }
  // A number, true, false or null: up to the next delimiter.
  while (at < bytes.length) {
    const byte = bytes[at]!;
    if (
      byte === COMMA || byte === CLOSE_OBJECT || byte === CLOSE_ARRAY ||
      isSpace(byte)
    ) break;
    at++;
  }
  return at;
}
