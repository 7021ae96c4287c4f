// Covers: src/_internal/json_bytes.ts, packages/engine/src/common/python_json.ts
//
// /usr/bin/python3 is the oracle: every body is read by Python's json.loads
// and by jsonText() + parseJson(), and what stringifyJson() writes of the
// value is read by json.loads again. Python's values and JavaScript's are
// compared as JavaScript holds strings (UTF-16 code units), numbers as
// doubles, and objects by key.
import { deepStrictEqual, ok, strictEqual, throws } from "node:assert/strict";
import { jsonText } from "../../src/_internal/json_bytes.ts";
import { parseJson, stringifyJson } from "@incontext/engine/vllm";
import { mulberry32, type Rand } from "../_kit/prng.ts";

/** Reads each case's body and what we wrote of it; says whether Python read both, alike. */
const ORACLE = `
import json, sys

def norm(v):
    if v is None or isinstance(v, bool):
        return v
    if isinstance(v, (int, float)):
        return repr(float(v) + 0.0)
    if isinstance(v, str):
        return "s" + v.encode("utf-16-le", "surrogatepass").hex()
    if isinstance(v, list):
        return ["a"] + [norm(x) for x in v]
    return ["o"] + sorted([norm(k), norm(x)] for k, x in v.items())

for line in sys.stdin:
    case = json.loads(line)
    try:
        read = norm(json.loads(bytes.fromhex(case["body"])))
    except Exception as error:
        print(json.dumps({"python": type(error).__name__}))
        continue
    same = None
    if case["ours"] is not None:
        same = norm(json.loads(bytes.fromhex(case["ours"]))) == read
    print(json.dumps({"python": "ok", "same": same}))
`;

interface Verdict {
  /** "ok", or the exception json.loads raised. */
  readonly python: string;
  /** Whether Python read what stringifyJson() wrote as the body. */
  readonly same: boolean | null;
}

const hex = (bytes: Uint8Array) =>
  Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");

/** Reads each body as decide() does, and writes the value again. */
function ours(body: Uint8Array): string | null {
  const decoded = jsonText(body);
  if (decoded === undefined) return null;
  try {
    return stringifyJson(parseJson(decoded.text).value) ?? null;
  } catch (error) {
    ok(error instanceof SyntaxError, String(error));
    return null;
  }
}

/** Python's verdict on each body and on what ours() wrote of it. */
async function oracle(
  bodies: readonly Uint8Array[],
  written: readonly (string | null)[],
): Promise<Verdict[]> {
  const child = new Deno.Command("/usr/bin/python3", {
    args: ["-c", ORACLE],
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const lines = bodies.map((body, i) => {
    const text = written[i];
    const mine = text === null || text === undefined
      ? null
      : hex(new TextEncoder().encode(text));
    return JSON.stringify({ body: hex(body), ours: mine }) + "\n";
  });
  // Read while writing: Python answers as it reads, past a pipe's buffer.
  const output = child.output();
  const writer = child.stdin.getWriter();
  await writer.write(new TextEncoder().encode(lines.join("")));
  await writer.close();
  const { code, stdout, stderr } = await output;
  strictEqual(code, 0, new TextDecoder().decode(stderr));
  return new TextDecoder().decode(stdout).trim().split("\n").map((line) =>
    JSON.parse(line)
  );
}

/** Checks that ours() accepts exactly what Python accepts, and reads the same values. */
async function agree(
  bodies: readonly Uint8Array[],
  name: (i: number) => string,
): Promise<{ accepted: number; refused: number }> {
  const written = bodies.map(ours);
  const verdicts = await oracle(bodies, written);
  let accepted = 0;
  for (const [i, verdict] of verdicts.entries()) {
    const python = verdict.python === "ok";
    strictEqual(written[i] !== null, python, `${name(i)}: ${verdict.python}`);
    if (python) {
      strictEqual(verdict.same, true, `${name(i)} was read otherwise`);
      accepted++;
    }
  }
  return { accepted, refused: bodies.length - accepted };
}

/**
 * Code points (a surrogate alone included) in one of json.loads's
 * encodings; one past U+10FFFF stands for bytes no encoding reads.
 */
function encode(points: readonly number[], encoding: string): Uint8Array {
  const bytes: number[] = [];
  for (const point of points) {
    if (encoding === "utf-8") {
      if (point > 0x10ffff) bytes.push(0xff); // no UTF-8 holds it
      else if (point < 0x80) bytes.push(point);
      else if (point < 0x800) {
        bytes.push(0xc0 | (point >> 6), 0x80 | (point & 0x3f));
      } else if (point < 0x10000) {
        // A surrogate too, as Python's surrogatepass writes it.
        bytes.push(
          0xe0 | (point >> 12),
          0x80 | ((point >> 6) & 0x3f),
          0x80 | (point & 0x3f),
        );
      } else {
        bytes.push(
          0xf0 | (point >> 18),
          0x80 | ((point >> 12) & 0x3f),
          0x80 | ((point >> 6) & 0x3f),
          0x80 | (point & 0x3f),
        );
      }
    } else if (encoding.startsWith("utf-16")) {
      if (point > 0x10ffff) continue; // UTF-16 cannot spell it
      const units = point < 0x10000 ? [point] : [
        0xd800 + ((point - 0x10000) >> 10),
        0xdc00 + ((point - 0x10000) & 0x3ff),
      ];
      for (const unit of units) {
        const pair = [unit >> 8, unit & 0xff];
        bytes.push(...(encoding === "utf-16le" ? pair.reverse() : pair));
      }
    } else {
      const quad = [
        point >>> 24,
        (point >> 16) & 0xff,
        (point >> 8) & 0xff,
        point & 0xff,
      ];
      bytes.push(...(encoding === "utf-32le" ? quad.reverse() : quad));
    }
  }
  return new Uint8Array(bytes);
}

const points = (text: string) => Array.from(text, (c) => c.codePointAt(0)!);
const utf8 = (text: string) => new TextEncoder().encode(text);
const raw = (...parts: (string | number[])[]) =>
  new Uint8Array(
    parts.flatMap((part) => typeof part === "string" ? [...utf8(part)] : part),
  );

const NAMED: readonly [string, Uint8Array][] = [
  ["NaN", utf8('{"temperature": NaN}')],
  ["Infinity", utf8('{"a": Infinity}')],
  ["-Infinity", utf8('{"logit_bias": {"1": -Infinity}}')],
  ["the constants in an array", utf8("[NaN,Infinity,-Infinity]")],
  ["a constant alone", utf8(" -Infinity\n")],
  ["-NaN", utf8('{"a": -NaN}')],
  ["nan", utf8('{"a": nan}')],
  ["infinity", utf8('{"a": infinity}')],
  ["+Infinity", utf8('{"a": +Infinity}')],
  ["- Infinity", utf8('{"a": - Infinity}')],
  ["1NaN", utf8('{"a": [1NaN]}')],
  ["NaN as a key", utf8("{NaN: 1}")],
  ["Infinityx", utf8('{"a": Infinityx}')],
  ["a constant inside a string", utf8('{"a": "NaN"}')],
  ["NaN and a trailing comma", utf8('{"a": NaN,}')],
  ["1e400 and NaN", utf8('{"a": 1e400, "b": NaN}')],
  ["__proto__ and NaN", utf8('{"__proto__": {"x": NaN}}')],
  ["an escaped lone surrogate", utf8('{"a": "\\ud800"}')],
  ["an escaped pair", utf8('{"a": "\\ud83d\\ude00"}')],
  ["a lone surrogate's bytes", raw('{"a": "', [0xed, 0xa0, 0x80], '"}')],
  ["a low surrogate's bytes in a key", raw('{"', [0xed, 0xb0, 0x80], '": 1}')],
  [
    "a pair spelled as two surrogates",
    raw('{"a": "', [0xed, 0xa0, 0xbd, 0xed, 0xb8, 0x80], '"}'),
  ],
  [
    "an escaped high surrogate before a low one's bytes",
    raw('{"a": "\\ud83d', [0xed, 0xb8, 0x80], '"}'),
  ],
  [
    "surrogate bytes and NaN",
    raw('{"a": "', [0xed, 0xbf, 0xbf], '", "b": NaN}'),
  ],
  [
    "a BOM and surrogate bytes",
    raw([0xef, 0xbb, 0xbf], '{"a": "', [0xed, 0xa0, 0x80], '"}'),
  ],
  ["surrogate bytes cut short", raw('{"a": "', [0xed, 0xa0], '"}')],
  ["a surrogate's bytes outside a string", raw('{"a": 1}', [0xed, 0xa0, 0x80])],
  ["an overlong NUL", raw('{"a": "', [0xc0, 0x80], '"}')],
  [
    "a code point past U+10FFFF",
    raw('{"a": "', [0xf4, 0x90, 0x80, 0x80], '"}'),
  ],
  ["ED followed by no continuation", raw('{"a": "', [0xed, 0xa0, 0x7f], '"}')],
  ["U+D7FF", raw('{"a": "', [0xed, 0x9f, 0xbf], '"}')],
  [
    "an invalid byte after surrogate bytes",
    raw('{"a": "', [0xed, 0xa0, 0x80, 0xff], '"}'),
  ],
  [
    "an invalid byte before surrogate bytes",
    raw('{"a": "', [0xff, 0xed, 0xa0, 0x80], '"}'),
  ],
  [
    "UTF-16LE with a lone surrogate",
    encode(
      points('{"a": "?"}').map((p) => p === 0x3f ? 0xd800 : p),
      "utf-16le",
    ),
  ],
  [
    "UTF-16BE with a low then a high surrogate",
    encode(
      points('{"a": "??"}').map((p, i) =>
        p === 0x3f ? (i === 7 ? 0xdc00 : 0xd83d) : p
      ),
      "utf-16be",
    ),
  ],
  [
    "UTF-16LE with a BOM and a lone surrogate",
    encode([
      0xfeff,
      ...points('{"a": "?", "b": NaN}').map((p) => p === 0x3f ? 0xdfff : p),
    ], "utf-16le"),
  ],
  [
    "UTF-16LE cut short",
    encode(points('{"a": 1}'), "utf-16le").subarray(0, 15),
  ],
  [
    "UTF-32LE with a pair as two surrogates",
    encode(
      points('{"a": "??"}').map((p, i) =>
        p === 0x3f ? (i === 7 ? 0xd83d : 0xde00) : p
      ),
      "utf-32le",
    ),
  ],
  [
    "UTF-32BE with a BOM and a lone surrogate",
    encode([
      0xfeff,
      ...points('{"a": "?"}').map((p) => p === 0x3f ? 0xd800 : p),
    ], "utf-32be"),
  ],
  [
    "UTF-32LE past U+10FFFF",
    encode(
      points('{"a": "?"}').map((p) => p === 0x3f ? 0x110000 : p),
      "utf-32le",
    ),
  ],
  ["a \\u escape with a sign", utf8('{"a": "\\u+fff"}')],
  ["an Arabic-Indic digit", utf8('{"a": \u0661}')],
  ["a second BOM", raw([0xef, 0xbb, 0xbf, 0xef, 0xbb, 0xbf], "{}")],
];

Deno.test("parseJson() reads what Python's json.loads reads, and nothing else", async (t) => {
  await t.step("named bodies", async () => {
    const { accepted, refused } = await agree(
      NAMED.map(([, body]) => body),
      (i) => NAMED[i]![0],
    );
    ok(accepted >= 20 && refused >= 15, `${accepted} read, ${refused} refused`);
  });

  await t.step("20,000 random bodies in every encoding", async () => {
    const rand = mulberry32(20260611);
    const bodies: Uint8Array[] = [];
    const encodings = ["utf-8", "utf-16le", "utf-16be", "utf-32le", "utf-32be"];
    for (let i = 0; i < 20_000; i++) {
      const text = i % 2 === 0 ? soup(rand) : mutated(valid(rand, 3), rand);
      const encoding = i % 10 === 9 ? pick(rand, encodings) : "utf-8";
      bodies.push(encode(text, encoding));
    }
    const { accepted, refused } = await agree(
      bodies,
      (i) => `body ${hex(bodies[i]!)}`,
    );
    // Both sides are exercised, or the comparison proves little.
    ok(
      accepted > 4000 && refused > 4000,
      `${accepted} read, ${refused} refused`,
    );
  });
});

Deno.test("parseJson() takes the fast path for JSON and says when a constant was read", () => {
  deepStrictEqual(parseJson('{"a": [1, "NaN"]}'), {
    value: { a: [1, "NaN"] },
    constants: false,
  });
  const { value, constants } = parseJson('{"a": [NaN, -Infinity], "b": {}}');
  strictEqual(constants, true);
  deepStrictEqual(value, { a: [NaN, -Infinity], b: {} });
  throws(() => parseJson('{"a": nan}'), SyntaxError);
  throws(() => parseJson(""), SyntaxError);
});

Deno.test("parseJson() reads __proto__ as an own member, as JSON.parse does", () => {
  const { value } = parseJson('{"__proto__": {"polluted": NaN}, "b": 1}');
  const object = value as Record<string, unknown>;
  ok(Object.hasOwn(object, "__proto__"));
  strictEqual(Object.getPrototypeOf(object), Object.prototype);
  strictEqual(({} as Record<string, unknown>).polluted, undefined);
  deepStrictEqual(Object.keys(object), ["__proto__", "b"]);
});

Deno.test("parseJson() reads any depth JSON.parse reads", () => {
  const depth = 100_000;
  const text = "[".repeat(depth) + "NaN" + "]".repeat(depth);
  let value = parseJson(text).value;
  for (let i = 0; i < depth; i++) value = (value as unknown[])[0];
  ok(Number.isNaN(value));
});

Deno.test("stringifyJson() writes JSON.stringify's text, the constants as Python writes them", () => {
  const plain = { a: [1, null, "x"], b: { c: true } };
  strictEqual(stringifyJson(plain), JSON.stringify(plain));
  strictEqual(
    stringifyJson({ a: NaN, b: [Infinity, -Infinity, null], c: "null" }),
    '{"a":NaN,"b":[Infinity,-Infinity,null],"c":"null"}',
  );
  strictEqual(stringifyJson(NaN), "NaN");
  strictEqual(stringifyJson(undefined), undefined);
  // A string that is the mark a constant is written through: refused, not altered.
  throws(
    () => stringifyJson({ a: NaN, b: "\u0000incontext:NaN" }),
    TypeError,
  );
  strictEqual(
    stringifyJson({ b: "\u0000incontext:NaN" }),
    JSON.stringify({ b: "\u0000incontext:NaN" }),
  );
});

// What the random bodies are made of.

function pick<T>(rand: Rand, items: readonly T[]): T {
  return items[Math.floor(rand() * items.length)]!;
}

/** Fragments of JSON and of what Python reads beyond it, surrogates alone included. */
const PIECES: readonly number[][] = [
  ..."{}[],: \n\t".split("").map(points),
  ...[
    '"a"',
    '"b"',
    '""',
    "NaN",
    "Infinity",
    "-Infinity",
    "-",
    "nan",
    "Inf",
    "1",
    "0",
    "-2",
    "0.5",
    "1e3",
    "1E+2",
    ".",
    "e",
    "true",
    "null",
    "fals",
    '"\\ud800"',
    '"\\ud83d\\ude00"',
    '"\\u00e9"',
    '"\\x"',
    '"\\',
    '"é"',
    '"\t"',
    '"😀"',
    "\u0661",
    "+1",
    "01",
    "1.",
    "-0",
    "1e999",
  ].map(points),
  [0x22, 0xd800, 0x22],
  [0x22, 0xdc00, 0x22],
  [0x22, 0xd83d, 0xde00, 0x22],
  [0xd800],
  [0xfeff],
  [0x110000],
];

function soup(rand: Rand): number[] {
  const length = 1 + Math.floor(rand() * 10);
  return Array.from({ length }, () => pick(rand, PIECES)).flat();
}

/** A body Python reads: objects and arrays of constants, numbers and strings. */
function valid(rand: Rand, depth: number): number[] {
  const roll = rand();
  if (depth > 0 && roll < 0.25) {
    const length = Math.floor(rand() * 4);
    const members = Array.from({ length }, () => [
      ...string(rand),
      ...points(pick(rand, [":", " : ", ":\n"])),
      ...valid(rand, depth - 1),
    ]);
    return [0x7b, ...join(members), 0x7d];
  }
  if (depth > 0 && roll < 0.45) {
    const length = Math.floor(rand() * 4);
    const items = Array.from({ length }, () => valid(rand, depth - 1));
    return [0x5b, ...join(items), 0x5d];
  }
  if (roll < 0.7) return string(rand);
  return points(pick(rand, [
    "NaN",
    "Infinity",
    "-Infinity",
    "0",
    "-1",
    "2.5",
    "1e400",
    "-3E-2",
    "true",
    "false",
    "null",
    "123456789012345678901234567890",
  ]));
}

function join(parts: number[][]): number[] {
  return parts.flatMap((part, i) =>
    i === 0 ? part : [...points(i % 2 ? "," : ", "), ...part]
  );
}

function string(rand: Rand): number[] {
  const length = Math.floor(rand() * 4);
  const inside = Array.from({ length }, () =>
    pick(rand, [
      points("a"),
      points("é"),
      points("😀"),
      points("\\n"),
      points('\\"'),
      points("\\ud800"),
      points("\\udc00"),
      [0xd83d],
      [0xde00],
      [0xdbff, 0xdfff],
    ])).flat();
  return [0x22, ...inside, 0x22];
}

/** `text`, sometimes with a piece dropped, replaced or added. */
function mutated(text: number[], rand: Rand): number[] {
  if (rand() < 0.5) return text;
  const at = Math.floor(rand() * (text.length + 1));
  const roll = rand();
  if (roll < 0.33) return [...text.slice(0, at), ...text.slice(at + 1)];
  const piece = pick(rand, PIECES);
  if (roll < 0.66) {
    return [...text.slice(0, at), ...piece, ...text.slice(at + 1)];
  }
  return [...text.slice(0, at), ...piece, ...text.slice(at)];
}
