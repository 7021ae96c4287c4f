/**
 * The parse of a request body that grew from a recent one. An agent's next
 * request repeats the previous one's text up to its last messages: the
 * messages both texts spell alike are taken from the previous parse (the
 * very objects), and only the rest is parsed, so a turn near 1M tokens does
 * not parse its 4 MB again. Exact: `JSON.parse` reads an element of an
 * array from its own text alone, and that text is the same. Only a top-level
 * `messages` array is taken so; any other body is parsed whole.
 *
 * @module
 */
import { commonPrefixLength } from "@incontext/engine";
import { type ParsedJson, parseJson } from "@incontext/engine/vllm";
import { holdsUnsafeNumber } from "./number_safety.ts";

/** Bodies shorter than this are parsed whole: the search would cost more than it saves. */
const MIN_LENGTH = 65536;
/** Bodies kept: a few conversations interleaved still find theirs. */
const RECENT = 4;

/** A body kept: its text, its value, where its messages start and end. */
interface Kept {
  readonly text: string;
  readonly value: object;
  readonly messages: readonly unknown[];
  /** How many first messages hold no number JavaScript cannot hold exactly. */
  safe: number;
  /**
   * Where its messages are; found the first time a body grows from it (a
   * body whose conversation does not come back costs no scan), null where
   * they cannot be.
   */
  layout: Layout | null | undefined;
}

/** The parses of recent bodies. */
export class GrownBodies {
  #recent: Kept[] = [];

  /**
   * Parses `text` as `parseJson` does: from a recent body's parse where it
   * grew from one.
   *
   * @throws {SyntaxError} Where `parseJson` throws.
   */
  parse(text: string): ParsedJson {
    if (text.length < MIN_LENGTH) return parseJson(text);
    const grown = this.#grown(text);
    if (grown !== undefined) return { value: grown, constants: false };
    const parsed = parseJson(text);
    if (!parsed.constants) this.#keep(text, parsed.value, undefined);
    return parsed;
  }

  /** The value of a text that grew from a kept one, or undefined. */
  #grown(text: string): unknown {
    let best: Kept | undefined;
    let common = 0;
    for (const kept of this.#recent) {
      const length = commonPrefixLength(kept.text, text);
      if (length > common) {
        common = length;
        best = kept;
      }
    }
    if (best === undefined) return undefined;
    if (best.layout === undefined) {
      const layout = topLevelMessages(best.text);
      best.layout = layout?.ends.length === best.messages.length
        ? layout
        : null;
    }
    if (best.layout === null) return undefined;
    const { start, ends } = best.layout;
    // The messages whose whole text is shared.
    const shared = countAtMost(ends, common);
    if (shared === 0) return undefined;
    // Each shared message stands as a 0 while the rest is parsed.
    const rest = text.slice(ends[shared - 1]!);
    let value: unknown;
    try {
      value = JSON.parse(
        `${text.slice(0, start + 1)}0${",0".repeat(shared - 1)}${rest}`,
      );
    } catch {
      return undefined;
    }
    const layout = messagesLayout(text, start, ends.slice(0, shared));
    const messages = (value as Record<string, unknown> | null)?.messages;
    if (
      layout === undefined || !Array.isArray(messages) ||
      messages.length !== layout.ends.length
    ) return undefined;
    for (let i = 0; i < shared; i++) {
      if (messages[i] !== 0) return undefined;
      messages[i] = best.messages[i];
    }
    // A body this one holds whole is kept no more; one it branched off stays.
    const superseded = shared === ends.length ? best : undefined;
    this.#keep(text, value, layout, superseded, Math.min(shared, best.safe));
    return value;
  }

  /**
   * `holdsUnsafeNumber` of a value this parsed, without walking again the
   * messages it took from a body already checked.
   */
  holdsUnsafeNumber(value: unknown): boolean {
    const kept = this.#recent.find((kept) => kept.value === value);
    if (kept === undefined) return holdsUnsafeNumber(value);
    const rest = {
      ...kept.value,
      messages: kept.messages.slice(kept.safe),
    };
    if (holdsUnsafeNumber(rest)) return true;
    kept.safe = kept.messages.length;
    return false;
  }

  /** Keeps a body with a list of messages, in place of one it holds whole. */
  #keep(
    text: string,
    value: unknown,
    layout: Layout | undefined,
    superseded?: Kept,
    safe = 0,
  ): void {
    if (typeof value !== "object" || value === null) return;
    const messages = (value as Record<string, unknown>).messages;
    if (!Array.isArray(messages)) return;
    const kept = { text, value, messages, safe, layout };
    this.#recent = [
      kept,
      ...this.#recent.filter((other) => other !== superseded),
    ].slice(0, RECENT);
  }
}

/** Where a body's messages array starts, and where each message ends. */
interface Layout {
  readonly start: number;
  readonly ends: readonly number[];
}

/** How many of the ascending `ends` are at most `limit`. */
function countAtMost(ends: readonly number[], limit: number): number {
  let low = 0;
  let high = ends.length;
  while (low < high) {
    const middle = (low + high) >> 1;
    if (ends[middle]! <= limit) low = middle + 1;
    else high = middle;
  }
  return low;
}

/**
 * The layout of the top-level `messages` array of a JSON object text: the
 * only `messages` key, holding an array. Undefined otherwise.
 */
function topLevelMessages(text: string): Layout | undefined {
  const scan = new Scanner(text);
  let at = scan.skipSpace(0);
  if (text[at] !== "{") return undefined;
  at = scan.skipSpace(at + 1);
  while (text[at] === '"') {
    const keyEnd = scan.stringEnd(at);
    if (keyEnd < 0) return undefined;
    const isMessages = scan.keyIs(at, keyEnd, "messages");
    at = scan.skipSpace(keyEnd);
    if (text[at] !== ":") return undefined;
    at = scan.skipSpace(at + 1);
    // The keys after it are read there.
    if (isMessages) {
      return text[at] === "[" ? messagesLayout(text, at, []) : undefined;
    }
    at = scan.valueEnd(at);
    if (at < 0) return undefined;
    at = scan.skipSpace(at);
    if (text[at] !== ",") return undefined;
    at = scan.skipSpace(at + 1);
  }
  return undefined;
}

/**
 * The layout of the messages array at `start`, whose first `ends` are
 * known (the list is extended, not copied); the rest of the text is checked
 * to hold no other `messages` key at the top level. Undefined where the
 * text is not so.
 */
function messagesLayout(
  text: string,
  start: number,
  ends: number[],
): Layout | undefined {
  const scan = new Scanner(text);
  const known = ends.length;
  let at = known === 0 ? start + 1 : ends[known - 1]!;
  at = scan.skipSpace(at);
  if (known > 0) {
    if (text[at] === ",") at = scan.skipSpace(at + 1);
    else if (text[at] !== "]") return undefined;
  }
  if (text[at] !== "]") {
    for (;;) {
      at = scan.valueEnd(at);
      if (at < 0) return undefined;
      ends.push(at);
      at = scan.skipSpace(at);
      if (text[at] === "]") break;
      if (text[at] !== ",") return undefined;
      at = scan.skipSpace(at + 1);
    }
  }
  // After the array: the other keys of the object, none `messages`.
  at = scan.skipSpace(at + 1);
  while (text[at] === ",") {
    at = scan.skipSpace(at + 1);
    const keyEnd = scan.stringEnd(at);
    if (keyEnd < 0 || scan.keyIs(at, keyEnd, "messages")) return undefined;
    at = scan.skipSpace(keyEnd);
    if (text[at] !== ":") return undefined;
    at = scan.valueEnd(scan.skipSpace(at + 1));
    if (at < 0) return undefined;
    at = scan.skipSpace(at);
  }
  if (text[at] !== "}") return undefined;
  return { start, ends };
}

/** JSON's white space. */
const SPACE = new Set([0x20, 0x09, 0x0a, 0x0d]);

/**
 * Finds where JSON values end without building them: strings skipped with
 * `indexOf`, so a message's text costs a few searches. It trusts the text
 * to be JSON (`JSON.parse` read it, or reads it next).
 */
class Scanner {
  readonly #text: string;

  constructor(text: string) {
    this.#text = text;
  }

  skipSpace(at: number): number {
    const text = this.#text;
    while (at < text.length && SPACE.has(text.charCodeAt(at))) at++;
    return at;
  }

  /** Just after the string starting at `at`, or -1. */
  stringEnd(at: number): number {
    const text = this.#text;
    if (text[at] !== '"') return -1;
    let quote = text.indexOf('"', at + 1);
    for (; quote >= 0; quote = text.indexOf('"', quote + 1)) {
      // A quote after an odd run of backslashes is escaped.
      let slashes = 0;
      while (text.charCodeAt(quote - 1 - slashes) === 0x5c) slashes++;
      if (slashes % 2 === 0) return quote + 1;
    }
    return -1;
  }

  /** Whether the string from `at` to `end` spells `key` (its escapes read as JSON reads them). */
  keyIs(at: number, end: number, key: string): boolean {
    const raw = this.#text.slice(at, end);
    return (raw.includes("\\") ? JSON.parse(raw) : raw.slice(1, -1)) === key;
  }

  /** Just after the value starting at `at`, or -1. */
  valueEnd(at: number): number {
    const text = this.#text;
    let depth = 0;
    while (at < text.length) {
      const code = text.charCodeAt(at);
      if (code === 0x22) {
        at = this.stringEnd(at);
        if (at < 0) return -1;
      } else if (code === 0x7b || code === 0x5b) {
        depth++;
        at++;
      } else if (code === 0x7d || code === 0x5d) {
        if (depth === 0) return at;
        depth--;
        at++;
      } else if (depth === 0 && (code === 0x2c || SPACE.has(code))) {
        return at;
      } else at++;
      if (depth === 0 && (code === 0x22 || code === 0x7d || code === 0x5d)) {
        return at;
      }
    }
    return depth === 0 ? at : -1;
  }
}
