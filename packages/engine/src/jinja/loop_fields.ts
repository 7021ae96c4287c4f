// The `loop` object of a `for` loop, and the two values whose contents
// change during a render: a `namespace()` and a `loop`.
import { raised } from "./errors.ts";
import { fn, make, type Value } from "./values.ts";

/** Shared integer values: values never change once made. */
const integers: Value[] = [];
function integer(n: number): Value {
  for (let k = integers.length; k <= n; k++) {
    integers.push(make("IntegerValue", k));
  }
  return integers[n]!;
}
const YES = make("BooleanValue", true);
const NO = make("BooleanValue", false);
const NONE = make("UndefinedValue", undefined);

const LOOP_KEYS = [
  "index",
  "index0",
  "revindex",
  "revindex0",
  "first",
  "last",
  "length",
  "previtem",
  "nextitem",
] as const;
/** What jinja2's loop has besides its fields: read, never listed. */
const LOOP_EXTRAS: ReadonlySet<string> = new Set(["cycle", "depth", "depth0"]);
const LOOP_KEY_SET: ReadonlySet<string> = new Set([
  ...LOOP_KEYS,
  ...LOOP_EXTRAS,
]);

/**
 * The entries of a `for` loop's `loop` object, read from the current item's
 * position instead of written nine times an item, as jinja2's single
 * LoopContext does: the same keys, in the same order, with the same values
 * as a Map filled for each item.
 */
export class LoopFields extends Map<string, Value> {
  /** The current item's index. */
  at = 0;
  readonly #items: readonly Value[];

  /** @param items The loop's items. */
  constructor(items: readonly Value[]) {
    super();
    this.#items = items;
  }

  override get(key: string): Value | undefined {
    const i = this.at;
    const length = this.#items.length;
    switch (key) {
      case "index":
        return integer(i + 1);
      case "index0":
        return integer(i);
      case "revindex":
        return integer(length - i);
      case "revindex0":
        return integer(length - i - 1);
      case "first":
        return i === 0 ? YES : NO;
      case "last":
        return i === length - 1 ? YES : NO;
      case "length":
        return integer(length);
      case "previtem":
        return i > 0 ? this.#items[i - 1]! : NONE;
      case "nextitem":
        return i < length - 1 ? this.#items[i + 1]! : NONE;
      // A loop of a chat template is never recursive: depth 1.
      case "depth":
        return integer(1);
      case "depth0":
        return integer(0);
      case "cycle":
        return fn((args) => {
          if (args.length === 0) {
            throw raised("no items for cycling given");
          }
          return args[i % args.length]!;
        });
      default:
        return undefined;
    }
  }

  override has(key: string): boolean {
    return LOOP_KEY_SET.has(key);
  }

  override get size(): number {
    return LOOP_KEYS.length;
  }

  override *entries(): MapIterator<[string, Value]> {
    for (const key of LOOP_KEYS) yield [key, this.get(key)!];
  }

  override *keys(): MapIterator<string> {
    yield* LOOP_KEYS;
  }

  override *values(): MapIterator<Value> {
    for (const key of LOOP_KEYS) yield this.get(key)!;
  }

  override [Symbol.iterator](): MapIterator<[string, Value]> {
    return this.entries();
  }

  override forEach(
    callback: (value: Value, key: string, map: Map<string, Value>) => void,
    thisArg?: unknown,
  ): void {
    for (const key of LOOP_KEYS) {
      callback.call(thisArg, this.get(key)!, key, this);
    }
  }
}

/** Whether a value is a `namespace()`. */
export function isNamespace(value: Value | undefined): value is Value {
  return value?.type === "NamespaceValue";
}

/** A value whose contents change during a render: a namespace or a `loop`. */
export function isMutable(value: Value): boolean {
  return value.type === "NamespaceValue" || value.value instanceof LoopFields;
}
