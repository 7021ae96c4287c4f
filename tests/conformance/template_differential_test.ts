// Renders generated templates and values with Python jinja2 (Debian's
// python3-jinja2, set up as transformers sets it up: tools/jinja2_oracle.py)
// and with compileChatTemplate, and requires the same outcome: the same text,
// or an error on both sides. The generators cover jinja2's scoping (`set` in
// loops, conditionals, nested loops and macros; namespace attributes) and
// filters and tests on Undefined, None, numbers and containers.
import { ok, strictEqual } from "node:assert/strict";
import {
  compileChatTemplate,
  TemplateRaisedError,
  TemplateUnsupportedError,
} from "../../packages/engine/src/jinja/chat_template.ts";
import { mulberry32, type Rand } from "../_kit/prng.ts";
import { type Jinja2Outcome, jinja2Render } from "./_oracles.ts";

/** The values templates read; `missing` is never defined (jinja2's Undefined). */
const CONTEXT = {
  none: null,
  zero: 0,
  int: 12,
  neg: -3,
  float: 1.5,
  text: "  Hello, World  ",
  word: "abc",
  empty: "",
  yes: true,
  list: [1, "two", null],
  strings: ["b", "a", "c"],
  dict: { k: "v", n: 2 },
  schema: { type: "array", items: { type: "string" }, update: 1 },
  percent: "%s|%d",
  nothing: null,
  messages: [
    { role: "system", content: "Be brief." },
    { role: "user", content: "Hi" },
    { role: "assistant", content: "Hello!", reasoning: "" },
    { role: "user", content: "More" },
  ],
};

const OPERANDS = [
  "none",
  "missing",
  "zero",
  "int",
  "neg",
  "float",
  "text",
  "word",
  "empty",
  "yes",
  "list",
  "strings",
  "dict",
  "missing.attr",
  "dict.k",
  "dict.absent",
  "messages[2].reasoning",
];

const FILTERS = [
  "trim",
  "trim('H')",
  "replace('l', 'L')",
  "replace('1', 'x', 1)",
  "replace('', '-')",
  "upper",
  "lower",
  "capitalize",
  "title",
  "string",
  "length",
  "count",
  "int",
  "float",
  "abs",
  "default('d')",
  "default('d', true)",
  "first",
  "last",
  "join(',')",
  "list",
  "tojson",
  "wordcount",
  "center(9)",
  "indent(2)",
  "truncate(4)",
  "round",
  "reverse | list",
  "sort | list",
  "unique | list",
  "e",
  "striptags",
];

const TESTS = [
  "defined",
  "undefined",
  "none",
  "string",
  "number",
  "integer",
  "float",
  "mapping",
  "iterable",
  "sequence",
  "true",
  "false",
  "boolean",
];

/** `{{ operand | filter }}` and `{{ operand is test }}` for every pair. */
function filterCases(): string[] {
  const cases: string[] = [];
  for (const operand of OPERANDS) {
    for (const filter of FILTERS) cases.push(`{{ ${operand} | ${filter} }}`);
    for (const test of TESTS) cases.push(`{{ ${operand} is ${test} }}`);
    cases.push(
      `{{ ${operand} ~ '|' }}`,
      `{% if ${operand} %}T{% else %}F{% endif %}`,
    );
  }
  return cases;
}

function pick<T>(rand: Rand, items: readonly T[]): T {
  return items[Math.floor(rand() * items.length)]!;
}

/**
 * A random program of nested loops, conditionals, macros and `set`s over
 * two names (`a`, `b`) and a namespace attribute, printing them as it goes.
 */
function scopingProgram(rand: Rand, depth = 0): string {
  const parts: string[] = [];
  const count = 1 + Math.floor(rand() * 3);
  for (let i = 0; i < count; i++) {
    const roll = rand();
    const name = pick(rand, ["a", "b"]);
    const expr = pick(rand, [
      `${name} ~ 'x'`,
      `'${name}' ~ loop_index | default(0) | string`,
      "ns.c | length",
      "(a | default('')) | length",
      "m.role | default('none')",
      "1",
    ]);
    if (roll < 0.3) parts.push(`{% set ${name} = ${expr} %}`);
    else if (roll < 0.45) {
      parts.push(
        `{% set ns.c = ns.c ~ (${name} | default('u') | string)[:2] %}`,
      );
    } else if (roll < 0.65 && depth < 3) {
      parts.push(
        `{% for m in messages %}{% set loop_index = loop.index %}${
          scopingProgram(rand, depth + 1)
        }{% endfor %}`,
      );
    } else if (roll < 0.8 && depth < 3) {
      parts.push(
        `{% if ${
          pick(rand, [
            "a is defined",
            "m is defined and m.role == 'user'",
            "ns.c | length > 3",
            "b",
          ])
        } %}${scopingProgram(rand, depth + 1)}{% else %}${
          scopingProgram(rand, depth + 1)
        }{% endif %}`,
      );
    } else if (roll < 0.85 && depth < 2) {
      parts.push(
        `{% macro mac(p) %}{% set a = p ~ '!' %}[{{ a }}]{% endmacro %}{{ mac(${name} | default('q')) }}`,
      );
    } else if (roll < 0.9) {
      // A macro of the top level: it reads the names bound there.
      parts.push("{{ outer() }}");
    } else {
      parts.push(`<{{ a | default('-') }}/{{ b | default('-') }}/{{ ns.c }}>`);
    }
  }
  return parts.join("");
}

function scopingCases(seed: number, n: number): string[] {
  const rand = mulberry32(seed);
  return Array.from(
    { length: n },
    () =>
      `{% set ns = namespace(c='') %}{% set a = 'A' %}{% macro outer() %}({{ a }}/{{ b | default('-') }}/{{ m is defined }}){% endmacro %}${
        scopingProgram(rand)
      }|{{ a }}|{{ b | default('-') }}|{{ ns.c }}`,
  );
}

/** What the renderer made of a template: text, a refusal, or "unsupported". */
type Strict = { text: string } | "refused" | "unsupported";

function strict(template: string): Strict {
  try {
    return {
      text: compileChatTemplate(template).render(structuredClone(CONTEXT)),
    };
  } catch (error) {
    if (error instanceof TemplateRaisedError) return "refused";
    if (error instanceof TemplateUnsupportedError) return "unsupported";
    throw error;
  }
}

/**
 * Requires jinja2's text where jinja2 renders and a refusal where it
 * raises; a case the renderer reports unsupported (a count that falls
 * back) passes, up to `unsupportedShare` of the cases.
 */
async function compareStrict(
  t: Deno.TestContext,
  cases: string[],
  unsupportedShare: number,
): Promise<void> {
  const expected = await jinja2Render(
    cases.map((template) => ({ template, context: CONTEXT })),
  );
  const differing: string[] = [];
  let unsupported = 0;
  for (const [i, template] of cases.entries()) {
    const want = expected[i]!;
    const got = strict(template);
    if (got === "unsupported") {
      unsupported++;
      continue;
    }
    const same = "text" in want
      ? typeof got === "object" && got.text === want.text
      : got === "refused";
    if (!same) {
      differing.push(
        `${template}\n  jinja2: ${JSON.stringify(want)}\n  ours:   ${
          JSON.stringify(got)
        }`,
      );
    }
  }
  await t.step(
    `${
      cases.length - differing.length - unsupported
    }/${cases.length} identical, ${unsupported} unsupported`,
    () => {
      strictEqual(differing.length, 0, differing.slice(0, 20).join("\n"));
      ok(
        unsupported <= unsupportedShare * cases.length,
        `${unsupported} unsupported`,
      );
    },
  );
}

function ours(template: string): Jinja2Outcome {
  try {
    return {
      text: compileChatTemplate(template).render(structuredClone(CONTEXT)),
    };
  } catch (error) {
    return {
      error: {
        type: (error as Error).name,
        message: (error as Error).message,
      },
    };
  }
}

async function compare(
  t: Deno.TestContext,
  cases: string[],
): Promise<void> {
  const expected = await jinja2Render(
    cases.map((template) => ({ template, context: CONTEXT })),
  );
  const differing: string[] = [];
  for (const [i, template] of cases.entries()) {
    const want = expected[i]!;
    const got = ours(template);
    const same = "text" in want
      ? "text" in got && got.text === want.text
      : "error" in got;
    if (!same) {
      differing.push(
        `${template}\n  jinja2: ${JSON.stringify(want)}\n  ours:   ${
          JSON.stringify(got)
        }`,
      );
    }
  }
  await t.step(
    `${cases.length - differing.length}/${cases.length} identical`,
    () => {
      strictEqual(differing.length, 0, differing.slice(0, 20).join("\n"));
    },
  );
}

Deno.test("compileChatTemplate() scopes set, loops, macros and namespaces as jinja2", async (t) => {
  const cases = scopingCases(20260524, 400);
  // The generator reaches every construct it is for.
  ok(cases.some((c) => c.includes("{% for") && c.includes("{% set a")));
  ok(cases.some((c) => c.includes("{% set ns.c")));
  ok(cases.some((c) => c.includes("{% macro mac")));
  ok(cases.some((c) => /\{% for[^]*\{\{ outer\(\) \}\}/.test(c)));
  await compare(t, cases);
});

Deno.test("compileChatTemplate() applies filters and tests to Undefined, None, numbers and containers as jinja2", async (t) => {
  await compareStrict(t, filterCases(), 0.02);
});

/**
 * Scoping in the other constructs that open a scope, and the loop object,
 * written out.
 */
const BLOCK_CASES = [
  "{% set a = 1 %}{% if true %}{% set a = 2 %}{% endif %}{{ a }}",
  "{% set a = 'x' %}{% filter upper %}{% set a = 'y' %}{{ a }}{% endfilter %}{{ a }}",
  "{% macro m() %}({{ caller() }}){% endmacro %}{% set a = 1 %}{% call m() %}{% set a = 2 %}{{ a }}{% endcall %}{{ a }}",
  "{% set ns = namespace(n=0) %}{% for x in [1, 2, 3] %}{% if x > 1 %}{% set ns.n = ns.n + x %}{% endif %}{% endfor %}{{ ns.n }}",
  "{% for x in [] %}{{ x }}{% else %}{% set a = 5 %}{{ a }}{% endfor %}{{ a is defined }}",
  "{% for x in [1, 2] %}{% for y in [3] %}{% set x = y %}{% endfor %}{{ x }}{% endfor %}",
  "{% set a = 1 %}{% macro m() %}{% set a = 2 %}{{ a }}{% endmacro %}{{ m() }}{{ a }}",
  "{% for x in [1, 2, 3] %}{{ loop.index }}{{ loop.cycle('a', 'b') }}{{ loop.previtem is defined }}{% endfor %}",
  "{% set a = 1 %}{% with a = a + 1, b = a %}{{ a }}{{ b }}{% set a = 9 %}{% endwith %}{{ a }}",
  "{% with %}{% set x = 1 %}{{ x }}{% endwith %}{{ x is defined }}",
  "{% for m in messages %}{% with role = m.role %}{{ role }}{{ loop.index }}{% endwith %}{% endfor %}",
  "{% set ns = namespace(n=0) %}{% with %}{% set ns.n = 5 %}{% endwith %}{{ ns.n }}",
  "{% set t = 'T' %}{% block head %}[{{ t }}]{% set t = 'U' %}{{ t }}{% endblock %}{{ t }}",
  "{% for m in messages %}{% block b %}{{ m is defined }}{{ int }}{% endblock %}{% endfor %}",
  "{% for m in messages %}{% block s scoped %}{{ m.role }}{% endblock %}{% endfor %}",
  "{% if false %}{% block r required %}{% endblock %}{% endif %}ok",
  "{% block r required %}{% endblock %}",
  "{% block a %}{% block inner %}i{% endblock %}a{% endblock %}",
  "{% block a %}1{% endblock %}{% block a %}2{% endblock %}",
  "{% block r required %}x{% endblock %}",
  "{% macro m() %}{{ a }}{% endmacro %}{% set a = 1 %}{% for x in [1] %}{% set a = 2 %}{{ m() }}{% endfor %}",
  "{% macro m() %}[{{ x }}]{% endmacro %}{% for x in [1, 2] %}{{ m() }}{% endfor %}",
  "{% macro m() %}[{{ p }}]{% endmacro %}{% macro n(p) %}{{ m() }}{% endmacro %}{{ n(5) }}",
  "{% macro m(t) %}{{ t }}{{ loop is defined }}{% endmacro %}{% for x in [1] %}{{ m(x) }}{% endfor %}",
  "{% macro m(x=y) %}{{ x }}{% endmacro %}{% set y = 4 %}{% for i in [1] %}{% set y = 5 %}{{ m() }}{% endfor %}",
  "{% macro m() %}[{{ caller(1) }}]{% endmacro %}{% for x in [7] %}{% call(a) m() %}{{ a }}{{ x }}{% endcall %}{% endfor %}",
  "{% macro m() %}x{% endmacro %}{% call m() %}b{% endcall %}",
  "{% macro m() %}{{ kwargs }}{{ varargs }}{% endmacro %}{{ m(1, 2, x=3) }}",
];

Deno.test("compileChatTemplate() scopes ifs, filter, call, with and block statements, macros and nested loops, and fills loop, as jinja2", async (t) => {
  await compareStrict(t, BLOCK_CASES, 0);
});

/** Values of every Python type a template meets, and the Undefined. */
const VALUES = [
  "none",
  "missing",
  "zero",
  "int",
  "float",
  "yes",
  "word",
  "empty",
  "percent",
  "list",
  "(1, 'a')",
  "dict",
];

const OPERATORS = [
  "+",
  "-",
  "*",
  "/",
  "//",
  "%",
  "**",
  "<",
  ">",
  "<=",
  ">=",
  "in",
  "not in",
];

/** Every operator on every pair of values, and the unary ones. */
function operatorCases(): string[] {
  const cases: string[] = [];
  for (const a of VALUES) {
    for (const op of OPERATORS) {
      for (const b of VALUES) cases.push(`{{ ${a} ${op} ${b} }}`);
    }
    cases.push(`{{ -${a} }}`, `{{ not ${a} }}`);
  }
  return cases;
}

/** Iterating, unpacking, subscripts, attributes and calls on every value. */
function lookupCases(): string[] {
  const cases: string[] = [];
  // `none` is jinja2's constant, which its optimizer folds: a variable holds None here.
  const values = VALUES.map((v) => v === "none" ? "nothing" : v);
  for (const v of [...values, "text", "schema", "strings", "messages[0]"]) {
    cases.push(
      `{% for x in ${v} %}[{{ x }}]{% else %}E{% endfor %}`,
      `{% for a, b in ${v} %}[{{ a }}{{ b }}]{% endfor %}`,
      `{% set a, b = ${v} %}{{ a }}{{ b }}`,
      `{{ ${v}[0] }}|{{ ${v}[-1] }}|{{ ${v}[9] }}`,
      `{{ ${v}['k'] }}|{{ ${v}['items'] is defined }}|{{ ${v}['type'] }}`,
      `{{ ${v}[1:] }}|{{ ${v}[::-1] }}|{{ ${v}[none:1] }}`,
      `{{ ${v}.k }}|{{ ${v}.length is defined }}|{{ ${v}.items is defined }}`,
      `{{ ${v}.update is defined }}|{{ ${v}.append is defined }}`,
      `{{ ${v}.get('k') }}|{{ ${v}.get('zz', 1) }}`,
      `{{ ${v}.items() | list }}`,
      `{{ ${v}.upper() }}`,
      `{{ ${v}.count('a') }}|{{ ${v}.index('a') }}`,
      `{{ ${v}.update({}) }}`,
      `{{ ${v}.append(1) }}`,
      `{{ ${v}() }}`,
      `{{ ${v} | length }}|{{ ${v} | count }}`,
      `{{ ${v} | items | list }}`,
      `{% if ${v}['items'] %}T{% else %}F{% endif %}`,
    );
  }
  return cases;
}

/**
 * Filters and tests jinja2 does not know: a compile error outside an `if`
 * or a conditional expression, a runtime error where one runs inside.
 */
const UNKNOWN_NAME_CASES = [
  "{{ word | nope }}",
  "{% if yes %}{{ word | nope }}{% endif %}",
  "{% if none %}{{ word | nope }}{% endif %}",
  "{% if word | nope %}{% endif %}",
  "{% if yes %}{% for i in list %}{{ i | nope }}{% endfor %}{% endif %}",
  "{% if none %}{% for i in list | nope %}{% endfor %}{% endif %}",
  "{% for i in list %}{% if none %}{{ i | nope }}{% endif %}{% endfor %}",
  "{% for i in list if i | nope %}{% endfor %}",
  "{{ int if word | nope else zero }}",
  "{{ (int if yes else zero) | nope }}",
  "{% if none %}{% macro m() %}{{ 1 | nope }}{% endmacro %}{% endif %}",
  "{% if none %}{% set x = 1 | nope %}{% endif %}",
  "{% if none %}{% set x %}{{ 1 | nope }}{% endset %}{% endif %}",
  "{% if none %}{% filter nope %}x{% endfilter %}{% endif %}",
  "{% if none %}{{ word is nope }}{% endif %}",
  "{% if yes %}{{ word is nope }}{% endif %}",
  "{{ word is nope }}",
  "{% if none %}{% with q = 1 | nope %}{% endwith %}{% endif %}",
  "{% if none %}{% with %}{{ 1 | nope }}{% endwith %}{% endif %}",
  "{% if none %}{% block b %}{{ 1 | nope }}{% endblock %}{% endif %}",
  "{% if none %}{% else %}{{ 1 | nope }}{% endif %}",
  "{% if none %}{% elif word | nope %}{% endif %}",
  "{{ list | map('nope') | list }}",
  "{{ list | select('nope') | list }}",
  "{% if yes %}{{ list | selectattr('x', 'nope') | list }}{% endif %}",
];

Deno.test("compileChatTemplate() applies Python's operators to every pair of values as jinja2 does, refusing where it raises", async (t) => {
  await compareStrict(t, operatorCases(), 0.02);
});

Deno.test("compileChatTemplate() iterates, unpacks, subscripts, reads attributes and calls as jinja2's sandbox does, refusing where it raises", async (t) => {
  await compareStrict(t, lookupCases(), 0.05);
});

Deno.test("compileChatTemplate() refuses unknown filters and tests where jinja2 does: at compile time outside an if, where they run inside one", async (t) => {
  await compareStrict(t, UNKNOWN_NAME_CASES, 0);
});
