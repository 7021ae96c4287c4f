// Python's `%` string formatting and `str.format()` for the conversions
// templates use; anything else raises rather than rendering differently.
import { pyFloatRepr } from "./py.ts";
import { pyRepr, pyStr, type Value } from "./values.ts";
import { raised, unsupported } from "./objects.ts";

/** Python's `%` conversion types. */
const PY_PERCENT_TYPES = "diouxXeEfFgGcrsa";

function isNumber(v: Value): boolean {
  return v.type === "IntegerValue" || v.type === "FloatValue" ||
    v.type === "BooleanValue";
}

function num(v: Value): number {
  return v.type === "BooleanValue" ? (v.value ? 1 : 0) : v.value as number;
}

/** The fields of a {@linkcode Spec} that {@linkcode pad} reads: callers pass their spec, so padding costs no object. */
type Layout = Pick<Spec, "width" | "align" | "fill">;

function pad(body: string, sign: string, layout: Layout): string {
  const { width, align, fill } = layout;
  const len = Array.from(sign + body).length;
  if (len >= width) return sign + body;
  const n = width - len;
  if (align === "=") return sign + fill.repeat(n) + body;
  if (align === "<") return sign + body + fill.repeat(n);
  if (align === "^") {
    const left = Math.floor(n / 2);
    return fill.repeat(left) + sign + body + fill.repeat(n - left);
  }
  return fill.repeat(n) + sign + body;
}

function fixed(x: number, precision: number): string {
  if (!Number.isFinite(x)) return Number.isNaN(x) ? "nan" : "inf";
  if (precision > 100) throw unsupported("a format precision over 100");
  // toFixed rounds ties away from zero; Python rounds the exact binary value,
  // which differs only on exact ties: refuse those rather than differ.
  const exact = x.toFixed(Math.min(100, precision + 30));
  const tail = exact.slice(
    exact.indexOf(".") + precision + (precision > 0 ? 1 : 1),
  );
  if (/^50*$/.test(tail)) throw unsupported("formatting an exact rounding tie");
  if (Math.abs(x) >= 1e21) {
    throw unsupported("formatting a float of 1e21 or more");
  }
  return x.toFixed(precision);
}

interface Spec {
  fill: string;
  align: string;
  sign: string;
  alt: boolean;
  zero: boolean;
  width: number;
  precision: number | null;
  type: string;
  comma?: boolean;
}

function formatNumber(v: Value, spec: Spec): string {
  if (!isNumber(v)) {
    throw raised(`format requires a number, not ${v.type}`);
  }
  const x = num(v);
  let body: string;
  const integral = v.type !== "FloatValue";
  switch (spec.type) {
    case "d":
    case "i":
    case "u":
      body = String(Math.trunc(Math.abs(x)));
      break;
    case "x":
    case "X":
    case "o":
    case "b": {
      if (!integral) {
        throw raised("integer required");
      }
      const radix = { x: 16, X: 16, o: 8, b: 2 }[spec.type]!;
      body = Math.trunc(Math.abs(x)).toString(radix);
      if (spec.type === "X") body = body.toUpperCase();
      break;
    }
    case "f":
    case "F":
      body = fixed(Math.abs(x), spec.precision ?? 6);
      break;
    case "%":
      body = fixed(Math.abs(x) * 100, spec.precision ?? 6) + "%";
      break;
    case "":
      if (!integral) {
        if (spec.precision !== null) {
          throw unsupported(
            "a float format without a type but with a precision",
          );
        }
        body = pyFloatRepr(Math.abs(x));
      } else body = String(Math.abs(x));
      break;
    default:
      throw unsupported(`the number format type '${spec.type}'`);
  }
  if (spec.comma) {
    // Thousands separators go into the integer digits only.
    const [, whole = "", rest = ""] = /^(\d*)(.*)$/s.exec(body)!;
    body = whole.replace(/\B(?=(\d{3})+$)/g, ",") + rest;
  }
  const negative = x < 0 || Object.is(x, -0);
  const sign = negative
    ? "-"
    : spec.sign === "+"
    ? "+"
    : spec.sign === " "
    ? " "
    : "";
  return pad(body, sign, spec);
}

/** Python's `text % args` (`args` a tuple, or a mapping for `%(name)s`). */
export function pyFormatPercent(
  text: string,
  args: Value[] | Map<string, Value>,
): string {
  let i = 0;
  let used = false;
  const next = (key: string | undefined): Value => {
    used = true;
    if (key !== undefined) {
      if (Array.isArray(args)) throw raised("format requires a mapping");
      const v = args.get(key);
      if (v === undefined) throw raised(`KeyError: '${key}'`);
      return v;
    }
    if (!Array.isArray(args)) {
      throw unsupported("% formatting of a mapping by position");
    }
    const v = args[i++];
    if (v === undefined) {
      throw raised("not enough arguments for format string");
    }
    return v;
  };
  const out = text.replace(
    /%(?:\(([^)]*)\))?([-+ 0#]*)(\d*)(?:\.(\d+))?(.?)/g,
    (
      _m,
      key: string | undefined,
      flags: string,
      w: string,
      p: string | undefined,
      type: string,
    ) => {
      if (type === "%") return "%";
      const v = next(key);
      const spec: Spec = {
        fill: flags.includes("0") && !flags.includes("-") ? "0" : " ",
        align: flags.includes("-") ? "<" : flags.includes("0") ? "=" : ">",
        sign: flags.includes("+") ? "+" : flags.includes(" ") ? " " : "",
        alt: flags.includes("#"),
        zero: flags.includes("0"),
        width: w === "" ? 0 : Number(w),
        precision: p === undefined ? null : Number(p),
        type,
      };
      if (spec.alt) throw unsupported("the % format flag #");
      if (type === "s" || type === "r") {
        let s = type === "s" ? pyStr(v) : pyRepr(v);
        if (spec.precision !== null) {
          s = Array.from(s).slice(0, spec.precision).join("");
        }
        // `%s` pads with spaces, and `0` right-aligns it: the spec is this field's own.
        spec.fill = " ";
        if (spec.align === "=") spec.align = ">";
        return pad(s, "", spec);
      }
      if ("diuxXof".includes(type) && type !== "") {
        if (spec.type === "f" && spec.precision === null) spec.precision = 6;
        return formatNumber(v, spec);
      }
      throw PY_PERCENT_TYPES.includes(type) && type !== ""
        ? unsupported(`the % format type '${type}'`)
        : raised(`unsupported format character '${type}'`);
    },
  );
  if (Array.isArray(args) && i < args.length) {
    throw raised("not all arguments converted during string formatting");
  }
  void used;
  return out;
}

const SPEC =
  /^(?:(.)?([<>=^]))?([-+ ]?)(#?)(0?)(\d*)(,?)(?:\.(\d+))?([a-zA-Z%]?)$/u;

function formatField(v: Value, specText: string): string {
  const m = SPEC.exec(specText);
  if (m === null) throw unsupported("this format specifier");
  const [, fillC, alignC, sign = "", alt, zero, w, comma, p, type = ""] = m;
  if (alt) throw unsupported("the format option #");
  if (
    comma && !"dfF%".includes(type) &&
    !(type === "" && v.type === "IntegerValue")
  ) {
    throw unsupported("a thousands separator for this format type");
  }
  const spec: Spec = {
    fill: fillC ?? (zero && !alignC ? "0" : " "),
    align: alignC ?? (zero ? "=" : ""),
    sign,
    alt: false,
    zero: zero === "0",
    width: w ? Number(w) : 0,
    precision: p === undefined ? null : Number(p),
    type,
    comma: comma === ",",
  };
  if (v.type === "StringValue" || !isNumber(v)) {
    if (spec.comma) throw raised("Cannot specify ',' with 's'.");
    if (type !== "" && type !== "s") {
      throw raised(`Unknown format code '${type}' for ${v.type}`);
    }
    if (!isNumber(v) && v.type !== "StringValue" && specText !== "") {
      throw raised("unsupported format string passed to object.__format__");
    }
    if (sign !== "" || spec.align === "=") {
      throw raised("sign not allowed in string format specifier");
    }
    let s = pyStr(v);
    if (spec.precision !== null) {
      s = Array.from(s).slice(0, spec.precision).join("");
    }
    spec.align ||= "<";
    return pad(s, "", spec);
  }
  if (v.type === "BooleanValue" && type === "" && specText === "") {
    return pyStr(v);
  }
  if (v.type === "BooleanValue" && type === "") {
    throw unsupported("a format specifier on a bool");
  }
  if (type === "" && spec.precision !== null) {
    throw unsupported("a float format without a type but with a precision");
  }
  if (v.type === "FloatValue" && "dxXob".includes(type) && type !== "") {
    throw raised(`Unknown format code '${type}' for float`);
  }
  return formatNumber(v, { ...spec, align: spec.align || ">" });
}

/** A `str.format()` call's arguments, with its field numbering so far. */
interface FormatArgs {
  readonly args: Value[];
  readonly kw: Map<string, Value>;
  /** The next automatic field's index. */
  n: number;
  /** Whether fields are numbered `"auto"` or `"manual"`; null before the first. */
  mode: string | null;
}

function lookup(field: string, call: FormatArgs): Value {
  const { args, kw } = call;
  const m = /^([^.[]*)(.*)$/s.exec(field)!;
  const [, head = "", rest = ""] = m;
  let v: Value | undefined;
  const mode = head === "" ? "auto" : /^\d+$/.test(head) ? "manual" : null;
  if (mode !== null) {
    if (call.mode !== null && call.mode !== mode) {
      throw raised("cannot mix manual and automatic field numbering");
    }
    call.mode = mode;
  }
  if (head === "") v = args[call.n++];
  else if (/^\d+$/.test(head)) v = args[Number(head)];
  else v = kw.get(head);
  if (v === undefined) {
    throw raised(`format field '${head}' is missing`);
  }
  for (const part of rest.matchAll(/\.([^.[]+)|\[([^\]]+)\]/g)) {
    const key = part[1] ?? part[2]!;
    if (
      part[1] !== undefined || !(Array.isArray(v.value) && /^\d+$/.test(key))
    ) {
      if (!(v.value instanceof Map) || part[1] !== undefined) {
        throw unsupported("attributes in format fields");
      }
      v = (v.value as Map<string, Value>).get(key);
    } else v = (v.value as Value[])[Number(key)];
    if (v === undefined) {
      throw raised(`format field '${key}' is missing`);
    }
  }
  return v;
}

/** Python's `str.format(*args, **kwargs)`. */
export function pyStrFormat(
  text: string,
  args: Value[],
  kw: Map<string, Value>,
): string {
  const call: FormatArgs = { args, kw, n: 0, mode: null };
  return text.replace(
    /\{\{|\}\}|\{([^{}]*)\}|[{}]/g,
    (m, inner: string | undefined) => {
      if (m === "{{") return "{";
      if (m === "}}") return "}";
      if (inner === undefined) {
        throw raised("Single brace in format string");
      }
      const fm = /^([^!:]*)(?:!([rsa]))?(?::(.*))?$/s.exec(inner);
      if (fm === null) throw unsupported("this format field");
      const [, field = "", conv, spec = ""] = fm;
      let v = lookup(field, call);
      if (conv === "r") {
        v = {
          ...v,
          type: "StringValue",
          value: pyRepr(v),
        } as Value;
      } else if (conv === "s") {
        v = {
          ...v,
          type: "StringValue",
          value: pyStr(v),
        } as Value;
      } else if (conv === "a") {
        throw unsupported("the conversion !a");
      }
      return formatField(v, spec);
    },
  );
}
