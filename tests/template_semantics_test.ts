// jinja2's scoping and its filters on Undefined, None and numbers, with the
// texts Python jinja2 renders (tests/conformance/template_differential_test.ts
// compares generated cases with jinja2 itself).
import { strictEqual, throws } from "node:assert/strict";
import {
  compileChatTemplate,
  TemplateRaisedError,
  TemplateUndefinedError,
} from "../src/template/chat_template.ts";

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
