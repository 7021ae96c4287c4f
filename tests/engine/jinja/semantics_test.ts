// Covers: packages/engine/src/jinja/chat_template.ts, packages/engine/src/jinja/interpreter.ts, packages/engine/src/jinja/compile_check.ts, packages/engine/src/jinja/macro.ts, packages/engine/src/jinja/macro_arguments.ts
// jinja2's scoping and its filters on Undefined, None and numbers, with the
// texts Python jinja2 renders (tests/conformance/template_differential_test.ts
// compares generated cases with jinja2 itself).
import { strictEqual, throws } from "node:assert/strict";
import {
  compileChatTemplate,
  detectContentFormat,
  TemplateRaisedError,
  TemplateUndefinedError,
  TemplateUnsupportedError,
} from "../../../packages/engine/src/jinja/chat_template.ts";

const CONTEXT = {
  n: null,
  i: 12,
  f: 1.5,
  l: [1, 2],
  msgs: [{ role: "user" }, { role: "assistant" }],
};

function render(source: string): string {
  return compileChatTemplate(source).render(structuredClone(CONTEXT));
}

Deno.test("compileChatTemplate() scopes a set in a loop body to its item, as jinja2", async (t) => {
  await t.step("an outer name is read, never rebound", () => {
    strictEqual(
      render(
        "{% set x = 1 %}{% for i in [1, 2] %}{% set x = x + i %}{{ x }}{% endfor %}{{ x }}",
      ),
      "231",
    );
  });
  await t.step("a name set in one item is gone at the next", () => {
    strictEqual(
      render(
        "{% for i in [1, 2] %}{% if i == 1 %}{% set y = 'a' %}{% endif %}[{{ y }}]{% endfor %}",
      ),
      "[a][]",
    );
    strictEqual(
      render(
        "{% for m in msgs %}{% for k in [1] %}{% set z = m.role %}{% endfor %}[{{ z }}]{% endfor %}",
      ),
      "[][]",
    );
  });
  await t.step("namespace attributes carry over", () => {
    strictEqual(
      render(
        "{% set ns = namespace(n=0) %}{% for i in [1, 2] %}{% set ns.n = ns.n + i %}{% endfor %}{{ ns.n }}",
      ),
      "3",
    );
  });
});

Deno.test("compileChatTemplate() scopes macros as jinja2: a macro sees the names where it is defined", async (t) => {
  await t.step("never its caller's loop variables, sets or parameters", () => {
    strictEqual(
      render(
        "{% macro m() %}{{ a }}{% endmacro %}{% set a = 1 %}{% for x in [1] %}{% set a = 2 %}{{ m() }}{% endfor %}",
      ),
      "1",
    );
    strictEqual(
      render(
        "{% macro m() %}[{{ x }}]{% endmacro %}{% for x in [1, 2] %}{{ m() }}{% endfor %}",
      ),
      "[][]",
    );
    strictEqual(
      render(
        "{% macro m() %}[{{ p }}]{% endmacro %}{% macro n(p) %}{{ m() }}{% endmacro %}{{ n(5) }}",
      ),
      "[]",
    );
    strictEqual(
      render(
        "{% macro m(t) %}{{ t }}{{ loop is defined }}{% endmacro %}{% for x in [1] %}{{ m(x) }}{% endfor %}",
      ),
      "1False",
    );
  });
  await t.step("its names as bound when it runs, defaults included", () => {
    strictEqual(
      render(
        "{% macro m() %}[{{ a }}]{% endmacro %}{{ m() }}{% set a = 3 %}{{ m() }}",
      ),
      "[][3]",
    );
    strictEqual(
      render(
        "{% macro m(x=y) %}{{ x }}{% endmacro %}{% set y = 4 %}{% for i in [1] %}{% set y = 5 %}{{ m() }}{% endfor %}",
      ),
      "4",
    );
    strictEqual(
      render(
        "{% for x in [1, 2] %}{% macro m() %}{{ x }}{% endmacro %}{{ m() }}{% endfor %}",
      ),
      "12",
    );
  });
  await t.step(
    "a call block's body is caller(), rendered where the call is",
    () => {
      strictEqual(
        render(
          "{% macro m() %}[{{ caller(1) }}]{% endmacro %}{% for x in [7] %}{% call(a) m() %}{{ a }}{{ x }}{% endcall %}{% endfor %}",
        ),
        "[17]",
      );
      strictEqual(
        render(
          "{% macro m() %}{{ caller is defined }}{% endmacro %}{{ m() }}",
        ),
        "False",
      );
      throws(
        () =>
          render("{% macro m() %}x{% endmacro %}{% call m() %}b{% endcall %}"),
        TemplateRaisedError,
      );
      throws(
        () => render("{% macro m() %}{{ caller() }}{% endmacro %}{{ m() }}"),
        TemplateUndefinedError,
      );
    },
  );
  await t.step(
    "extra arguments only where the body reads varargs or kwargs",
    () => {
      strictEqual(
        render(
          "{% macro m() %}{{ kwargs }}{{ varargs }}{% endmacro %}{{ m(1, 2, x=3) }}",
        ),
        "{'x': 3}(1, 2)",
      );
      throws(
        () => render("{% macro m(a) %}{{ a }}{% endmacro %}{{ m(1, a=2) }}"),
        TemplateRaisedError,
      );
      throws(
        () => render("{% macro m() %}{% endmacro %}{{ m(1) }}"),
        TemplateRaisedError,
      );
    },
  );
});

Deno.test("compileChatTemplate() applies text filters to str() of None, Undefined and numbers, as jinja2", () => {
  strictEqual(
    render("{{ n | trim }}|{{ i | trim }}|{{ nope | trim }}|{{ f | trim }}"),
    "None|12||1.5",
  );
  strictEqual(
    render(
      "{{ n | replace('N', 'x') }}|{{ i | replace('1', 'x') }}|{{ nope | replace('a', 'b') }}|{{ 'abc' | replace('', '-', 2) }}",
    ),
    "xone|x2||-a-bc",
  );
  strictEqual(
    render("{{ n | capitalize }}|{{ i | title }}|{{ nope | title }}"),
    "None|12|",
  );
  strictEqual(
    render(
      "{{ n | e }}|{{ '<a href=\"x\">T&amp;C</a>' | striptags }}|{{ '<b>' | e }}",
    ),
    "None|T&C|&lt;b&gt;",
  );
  strictEqual(
    render(
      "{{ ['b', 'A', 'c'] | sort | join }}|{{ nope | sort | list }}|{{ 'cba' | sort | join }}",
    ),
    "Abc|[]|abc",
  );
  strictEqual(
    render("{{ l | truncate(4) }}|{{ nope | truncate(4) }}"),
    "[1, 2]|",
  );
});

Deno.test("compileChatTemplate() raises where jinja2 raises on Undefined, None and numbers", () => {
  for (const source of ["{{ nope | int }}", "{{ nope | float }}"]) {
    throws(() => render(source), TemplateUndefinedError, source);
  }
  // Python's TypeError: the server rejects the request too.
  for (const source of ["{{ n | indent(2) }}", "{{ i | truncate(4) }}"]) {
    throws(() => render(source), TemplateRaisedError, source);
  }
});

Deno.test("compileChatTemplate() applies Python's operators, raising where Python raises", async (t) => {
  await t.step("numbers, strings and sequences", () => {
    strictEqual(
      render(
        "{{ 7 // 2 }} {{ -7 // 2 }} {{ -7 % 3 }} {{ 7.5 % -2 }} {{ 1 / 2 }} {{ 2 ** 10 }} {{ 2 ** -1 }} {{ true + 1 }}",
      ),
      "3 -4 2 -0.5 0.5 1024 0.5 2",
    );
    strictEqual(
      render(
        "{{ 'ab' * 2 }}{{ l + [3] }}{{ (1, 2) + (3, 4) }}{{ '%s-%03d' % ('a', 7) }}",
      ),
      "abab[1, 2, 3](1, 2, 3, 4)a-007",
    );
    strictEqual(
      render(
        "{{ 'b' in 'abc' }}{{ 2 in l }}{{ 'role' in msgs[0] }}{{ 1 in missing }}",
      ),
      "TrueTrueTrueFalse",
    );
  });
  await t.step("a TypeError of Python's is a refusal", () => {
    for (
      const source of [
        "{{ ' - ' + n }}",
        "{{ i + 'a' }}",
        "{{ l + (1, 2) }}",
        "{{ 'a' * 1.5 }}",
        "{{ i < 'a' }}",
        "{{ n < 1 }}",
        "{{ 1 in 'abc' }}",
        "{{ 'a' in n }}",
        "{{ [1] in {'a': 1} }}",
        "{{ 1 / 0 }}",
        "{{ -'a' }}",
        "{{ 'a' % (1, 2) }}",
      ]
    ) throws(() => render(source), TemplateRaisedError, source);
  });
  await t.step(
    "an Undefined in arithmetic or ordering is jinja2's UndefinedError",
    () => {
      for (
        const source of [
          "{{ missing + 1 }}",
          "{{ 1 < missing }}",
          "{{ -missing }}",
        ]
      ) {
        throws(() => render(source), TemplateUndefinedError, source);
      }
      strictEqual(render("{{ '%s|' % missing }}"), "|");
    },
  );
  await t.step("an integer beyond 2^53 is not computed", () => {
    throws(() => render("{{ 2 ** 60 }}"), TemplateUnsupportedError);
  });
});

Deno.test("compileChatTemplate() iterates and unpacks as Python does", () => {
  strictEqual(
    render("{% for c in 'añ👩' %}[{{ c }}]{% endfor %}"),
    "[a][ñ][👩]",
  );
  strictEqual(render("{% for k in msgs[0] %}{{ k }}{% endfor %}"), "role");
  strictEqual(
    render("{% for a, b in ['xy', (1, 2)] %}{{ a }}{{ b }};{% endfor %}"),
    "xy;12;",
  );
  strictEqual(render("{% set a, b = 'pq' %}{{ b }}{{ a }}"), "qp");
  for (
    const source of [
      "{% for x in n %}{% endfor %}",
      "{% for x in i %}{% endfor %}",
      "{% for a, b in ['xyz'] %}{% endfor %}",
      "{% set a, b = l + [3] %}",
    ]
  ) throws(() => render(source), TemplateRaisedError, source);
});

Deno.test("compileChatTemplate() looks attributes and items up as jinja2's sandbox does", () => {
  const schema = "{% set s = {'type': 'array', 'items': {'type': 'string'}} %}";
  strictEqual(
    render(`${schema}{{ s['items']['type'] }}|{{ s.items is defined }}`),
    "string|True",
  );
  // Without the key, `s['items']` is dict.items: true, with no `type`.
  strictEqual(
    render(
      "{% set s = {'type': 'array'} %}{% if s['items'] %}T{{ s['items']['type'] is defined }}{% endif %}",
    ),
    "TFalse",
  );
  strictEqual(
    render(
      "{{ 'abc'.length is defined }}|{{ l.length is defined }}|{{ 'abc'[-1] }}",
    ),
    "False|False|c",
  );
  strictEqual(
    render(
      "{{ msgs[0].get('role') }}|{{ msgs[0].get('x', 1) }}|{{ l.count(2) }}",
    ),
    "user|1|1",
  );
  throws(
    () => render("{% set d = {} %}{{ d.update({'a': 1}) }}"),
    TemplateUndefinedError,
  );
  throws(() => render("{{ l.append(3) }}"), TemplateUndefinedError);
  throws(() => render("{{ 'abc'.items() }}"), TemplateUndefinedError);
  throws(() => render("{{ i() }}"), TemplateRaisedError);
  throws(() => render("{{ n[1:] }}"), TemplateRaisedError);
  throws(() => render("{{ 'abc'.casefold() }}"), TemplateUnsupportedError);
  // jinja2's loop has changed(); a namespace has no such attribute.
  throws(
    () => render("{% for x in l %}{{ loop.changed(x) }}{% endfor %}"),
    TemplateUnsupportedError,
  );
  strictEqual(
    render("{% set ns = namespace(a=1) %}{{ ns.changed is defined }}"),
    "False",
  );
});

Deno.test("compileChatTemplate() parses {% with %} and {% block %} and scopes them as jinja2", () => {
  strictEqual(
    render(
      "{% set a = 1 %}{% with a = a + 1, b = a %}{{ a }}{{ b }}{% set a = 9 %}{% endwith %}{{ a }}",
    ),
    "211",
  );
  strictEqual(
    render("{% with %}{% set x = 1 %}{{ x }}{% endwith %}{{ x is defined }}"),
    "1False",
  );
  strictEqual(
    render(
      "{% set t = 'T' %}{% for m in msgs %}{% block b %}{{ t }}{{ m is defined }}{% endblock %}{% endfor %}",
    ),
    "TFalseTFalse",
  );
  strictEqual(
    render(
      "{% for m in msgs %}{% block s scoped %}{{ m.role }}{% endblock s %}{% endfor %}",
    ),
    "userassistant",
  );
  throws(
    () => render("{% block r required %}{% endblock %}"),
    TemplateRaisedError,
  );
  strictEqual(
    render("{% if false %}{% block r required %}{% endblock %}{% endif %}ok"),
    "ok",
  );
});

Deno.test("compileChatTemplate() refuses what jinja2 would not compile, and unknown names where they run", () => {
  const template = compileChatTemplate("{{ x | no_such_filter }}");
  throws(() => template.render({ x: 1 }), TemplateRaisedError);
  throws(
    () => render("{% block a %}{% endblock %}{% block a %}{% endblock %}"),
    TemplateRaisedError,
  );
  strictEqual(render("{% if n %}{{ i | no_such_filter }}{% endif %}ok"), "ok");
  throws(
    () => render("{% if i %}{{ i | no_such_filter }}{% endif %}"),
    TemplateRaisedError,
  );
  throws(
    () => render("{% if i %}{{ i is no_such_test }}{% endif %}"),
    TemplateRaisedError,
  );
  // jinja2 has these filters; the renderer does not: unsupported, not refused.
  throws(() => render("{{ 'a b' | wordwrap(1) }}"), TemplateUnsupportedError);
  // vLLM's detection fails on a template jinja2 does not compile: the default.
  strictEqual(
    detectContentFormat(
      "{% for m in messages %}{{ x | nope }}{% for p in m.content %}{% endfor %}{% endfor %}",
    ),
    "string",
  );
});
