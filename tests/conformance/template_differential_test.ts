// Renders generated templates and values with Python jinja2 (Debian's
// python3-jinja2, set up as transformers sets it up: tools/jinja2_oracle.py)
// and with compileChatTemplate, and requires the same outcome: the same text,
// or an error on both sides. The generators cover jinja2's scoping (`set` in
// loops, conditionals, nested loops and macros; namespace attributes) and
// filters and tests on Undefined, None, numbers and containers.
import { ok, strictEqual } from "node:assert/strict";
import { compileChatTemplate } from "../../src/template/chat_template.ts";
import { mulberry32, type Rand } from "../_prng.ts";
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
      `{% set ns = namespace(c='') %}{% set a = 'A' %}${
        scopingProgram(rand)
      }|{{ a }}|{{ b | default('-') }}|{{ ns.c }}`,
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
  ok(cases.some((c) => c.includes("{% macro")));
  await compare(t, cases);
});

Deno.test("compileChatTemplate() applies filters and tests to Undefined, None, numbers and containers as jinja2", async (t) => {
  await compare(t, filterCases());
});

/**
 * Scoping in the other constructs that open a scope, and the loop object,
 * written out. (`{% block %}` and `{% with %}` are not parsed: a template
 * with them fails to compile, so nothing is counted from it.)
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
];

Deno.test("compileChatTemplate() scopes ifs, filter and call blocks, macros and nested loops, and fills loop, as jinja2", async (t) => {
  await compare(t, BLOCK_CASES);
});
