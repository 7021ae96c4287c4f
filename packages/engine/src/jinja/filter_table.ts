// Every filter of transformers' jinja2 environment the renderer has, by
// name: the ones of filters.ts, and those that read their operand as text
// or as JSON. A name jinja2 has and the renderer lacks is unsupported; any
// other name, jinja2 refuses.
import { filterTable } from "./filters.ts";
import { JINJA2_FILTERS } from "./names.ts";
import {
  itemsOf,
  params,
  raised,
  splitArgs,
  truthy,
  unsupported,
} from "./objects.ts";
import { STRING_METHODS } from "./str.ts";
import { pyCapitalize, pyTitleFilter } from "./py.ts";
import { make, pyJsonDumps, pyStr, type Value } from "./values.ts";

/** A filter: the operand, then the filter's arguments, keyword arguments last. */
export type Filter = (args: Value[]) => Value;

const str = (value: string): Value => make("StringValue", value);

/** transformers' `tojson`: Python's `json.dumps` with its keyword arguments. */
function tojson(args: Value[]): Value {
  const [[operand, ...rest], kw] = splitArgs(args) as [
    [Value, ...Value[]],
    Map<string, Value>,
  ];
  const get = (name: string, i: number) => rest[i] ?? kw.get(name);
  const indent = get("indent", 1);
  const separators = get("separators", 3);
  const sortKeys = get("sort_keys", 4);
  const pair = separators?.value as Value[] | null | undefined;
  return str(pyJsonDumps(operand, {
    ensureAscii: Boolean(get("ensure_ascii", 0)?.value),
    indent: (indent?.value ?? null) as number | string | null,
    separators: Array.isArray(pair)
      ? [pair[0]!.value as string, pair[1]!.value as string]
      : null,
    sortKeys: Boolean(sortKeys?.value),
  }));
}

function length(args: Value[]): Value {
  const value = args[0]!;
  if (value.type === "StringValue") {
    return make("IntegerValue", Array.from(value.value as string).length);
  }
  const items = value.value;
  if (value.type === "UndefinedValue") return make("IntegerValue", 0);
  if (value.type === "IteratorValue") {
    throw raised("object of type 'generator' has no len()");
  }
  if (Array.isArray(items)) return make("IntegerValue", items.length);
  if (items instanceof Map) return make("IntegerValue", items.size);
  throw raised(`object of type '${value.type}' has no len()`);
}

function join(args: Value[]): Value {
  const [[operand, separator], kw] = splitArgs(args) as [
    [Value, Value?],
    Map<string, Value>,
  ];
  // jinja2 reads the separator with str(), as it reads the items.
  const d = separator ?? kw.get("d");
  const sep = d === undefined ? "" : pyStr(d);
  const items = operand.type === "StringValue"
    ? Array.from(operand.value as string)
    : itemsOf(operand).map(pyStr);
  return str(items.join(sep));
}

/** jinja2's `default(value, default_value='', boolean=False)`. */
function byDefault(args: Value[]): Value {
  const [value, [fallback, boolean]] = params(args, [
    "default_value",
    "boolean",
  ]);
  const missing = value.type === "UndefinedValue" ||
    (boolean !== undefined && truthy(boolean) && !truthy(value));
  return missing ? fallback ?? str("") : value;
}

/** jinja2's text filters read their operand with `str()`: None is "None", an Undefined "", a number its digits. */
function onText(body: (text: string) => string): Filter {
  return (args) => str(body(pyStr(args[0]!)));
}

const trim = STRING_METHODS.get("strip")!;

const FILTERS: ReadonlyMap<string, Filter> = filterTable(
  new Map<string, Filter>([
    ["tojson", tojson],
    ["trim", ([operand, ...rest]) => {
      const [args, kw] = splitArgs(rest);
      return trim(pyStr(operand!), args, kw);
    }],
    ["title", onText(pyTitleFilter)],
    ["capitalize", onText(pyCapitalize)],
    ["length", length],
    ["count", length],
    ["string", onText((text) => text)],
    ["join", join],
    ["default", byDefault],
    ["d", byDefault],
    // Markup, which jinja2 makes here, is text that escapes what it is
    // joined with; without autoescaping, templates print it as the value.
    ["safe", ([operand]) => operand!],
  ]),
);

/**
 * The filter named `name`.
 *
 * @throws {UnsupportedError} For a filter jinja2 has and the renderer lacks.
 * @throws {PyRaisedError} For a name jinja2 does not know either.
 */
export function filterNamed(name: string): Filter {
  const filter = FILTERS.get(name);
  if (filter !== undefined) return filter;
  throw JINJA2_FILTERS.has(name)
    ? unsupported(`the filter '${name}'`)
    : raised(`No filter named '${name}' found.`);
}
