// The global names of a render: jinja2's constants and `range`, `dict` and
// `namespace`, and transformers' `raise_exception` and `strftime_now`.
import { pyIter } from "./operators.ts";
import { raised, splitArgs, unsupported } from "./objects.ts";
import { strftime } from "./strftime.ts";
import { fn, make, pyStr, type Value } from "./values.ts";

/** What the globals need from the caller. */
export interface GlobalsOptions {
  readonly now: () => Date;
  readonly raise: (message: string) => never;
}

/** The longest range jinja2's sandbox makes. */
const MAX_RANGE = 100_000;

function range(args: Value[]): Value {
  if (
    args.length === 0 || args.length > 3 ||
    args.some((a) => a.type !== "IntegerValue" && a.type !== "BooleanValue")
  ) {
    throw raised("range() takes one to three integers");
  }
  const n = args.map((a) => Number(a.value));
  const [start, stop, step] = n.length === 1
    ? [0, n[0]!, 1]
    : [n[0]!, n[1]!, n[2] ?? 1];
  if (step === 0) throw raised("range() arg 3 must not be zero");
  if (Math.max(0, Math.ceil((stop - start) / step)) > MAX_RANGE) {
    throw raised(
      "Range too big. The sandbox blocks ranges larger than MAX_RANGE",
    );
  }
  const out: Value[] = [];
  for (let i = start; step > 0 ? i < stop : i > stop; i += step) {
    out.push(make("IntegerValue", i));
  }
  return make("ArrayValue", out);
}

/** jinja2's default globals the renderer lacks: calling one is unsupported. */
export const JINJA2_GLOBALS: ReadonlySet<string> = new Set([
  "cycler",
  "joiner",
  "lipsum",
]);

// Python's `dict(mapping?, **kwargs)`.
function dict(args: Value[]): Value {
  const [positional, kw] = splitArgs(args);
  if (positional.length > 1) {
    throw raised("dict expected at most 1 argument");
  }
  const out = new Map<string, Value>();
  const first = positional[0];
  if (first !== undefined) {
    if (!(first.value instanceof Map)) {
      throw unsupported("dict() of pairs");
    }
    for (const [k, v] of first.value as Map<string, Value>) out.set(k, v);
  }
  for (const [k, v] of kw) out.set(k, v);
  return make("ObjectValue", out);
}

/** One entry of `namespace([(key, value), ...])`: a pair, or a two-character string. */
function pair(item: Value): [string, Value] {
  const values = pyIter(item);
  if (values.length !== 2) {
    throw raised(
      "dictionary update sequence element has the wrong length; 2 is required",
    );
  }
  const [key, value] = values as [Value, Value];
  if (key.type !== "StringValue") {
    throw unsupported("a namespace key that is not a string");
  }
  return [key.value as string, value];
}

/** jinja2's `namespace(mapping_or_pairs?, **attributes)`: a fresh namespace. */
function namespace(args: Value[]): Value {
  const [positional, kw] = splitArgs(args);
  if (positional.length > 1) {
    throw raised(`dict expected at most 1 argument, got ${positional.length}`);
  }
  const entries = new Map<string, Value>();
  const source = positional[0];
  if (source !== undefined) {
    if (source.type === "ObjectValue") {
      for (const [k, v] of source.value as Map<string, Value>) {
        entries.set(k, v);
      }
    } else {
      for (const item of pyIter(source)) entries.set(...pair(item));
    }
  }
  for (const [k, v] of kw) entries.set(k, v);
  return make("NamespaceValue", entries);
}

/**
 * Builds the global variables of a render: the same values for every
 * render of a template.
 */
export function globalsFor(options: GlobalsOptions): Map<string, Value> {
  return new Map<string, Value>([
    ["true", make("BooleanValue", true)],
    ["false", make("BooleanValue", false)],
    ["none", make("NullValue", null)],
    ["True", make("BooleanValue", true)],
    ["False", make("BooleanValue", false)],
    ["None", make("NullValue", null)],
    ["range", fn(range)],
    ["dict", fn(dict)],
    ["namespace", fn(namespace)],
    [
      "raise_exception",
      fn(([m]) => options.raise(m === undefined ? "" : pyStr(m))),
    ],
    [
      "strftime_now",
      fn(([f]) =>
        make("StringValue", strftime(options.now(), String(f?.value ?? "")))
      ),
    ],
  ]);
}
