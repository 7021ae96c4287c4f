import { deepStrictEqual, strictEqual, throws } from "node:assert/strict";
import {
  compileChatTemplate,
  parseJsonLossless,
  PyFloat,
  TemplateRaisedError,
  TemplateUndefinedError,
  TemplateUnsupportedError,
} from "../../../packages/engine/src/jinja/chat_template.ts";

// Expected strings are jinja2 3.1 outputs (transformers' environment); the
// oracle test checks the same constructs against a live jinja2.
function render(source: string, context: Record<string, unknown> = {}): string {
  const now = () => new Date(2026, 2, 7, 15, 4, 5);
  return compileChatTemplate(source, { now }).render(context);
}

Deno.test("compileChatTemplate() follows Python string semantics", async (t) => {
  await t.step("strip/lstrip/rstrip honour their chars argument", () => {
    strictEqual(
      render(
        "{{ x.strip('\\n') }}|{{ x.lstrip('\\n') }}|{{ x.rstrip('\\n') }}",
        { x: "\n\na \n" },
      ),
      "a |a \n|\n\na ",
    );
  });
  await t.step("strip(), trim and split() use Python's whitespace set", () => {
    strictEqual(
      render("[{{ x.strip() }}][{{ x | trim }}]", { x: "\x1c\x85 a\u3000" }),
      "[a][a]",
    );
    deepStrictEqual(
      render("{{ x.split() }}", { x: " a\x1fb\u00a0c " }),
      "['a', 'b', 'c']",
    );
  });
  await t.step("title(), capitalize and length match Python", () => {
    strictEqual(
      render("{{ x.title() }}|{{ x | title }}|{{ x | capitalize }}", {
        x: "it's a-b",
      }),
      "It'S A-B|It's A-B|It's a-b",
    );
    strictEqual(render("{{ x | length }}", { x: "a👋🏽" }), "3");
  });
  await t.step("printed values look like Python's", () => {
    strictEqual(
      render("{{ a }} {{ b }} {{ c }} {{ d }}", {
        a: true,
        b: null,
        c: [1, new PyFloat(2), "x"],
        d: new Map([["k", false]]),
      }),
      "True None [1, 2.0, 'x'] {'k': False}",
    );
  });
});

Deno.test("compileChatTemplate() applies jinja2's filters in expressions and filter blocks", async (t) => {
  await t.step("default, by either name, with or without arguments", () => {
    strictEqual(
      render(
        "{{ missing | d('x') }}[{{ missing | default }}]{{ none | d(default_value='y', boolean=true) }}{{ 0 | default(1) }}",
      ),
      "x[]y0",
    );
  });
  await t.step(
    "a filter block's text goes through the filter; only text joins the output",
    () => {
      strictEqual(
        render(
          "{% filter replace('a', 'b') %}aa{% endfilter %}{% filter trim %}\u3000a {% endfilter %}",
        ),
        "bba",
      );
      throws(
        () => render("{% filter length %}abc{% endfilter %}"),
        TemplateRaisedError,
      );
    },
  );
  await t.step("str methods as Python has them", () => {
    strictEqual(
      render(
        "{{ 'abc'.startswith(('x', 'a')) }}{{ 'ab'.upper() }}{{ 'a-b-c'.replace('-', '+', 1) }}|{{ 'abc' | attr('length') }}|",
      ),
      "TrueABa+b-c||",
    );
    throws(() => render("{{ 'abc'.startswith(['a']) }}"), TemplateRaisedError);
  });
});

Deno.test("compileChatTemplate() normalises CR LF and lone CR in the source", () => {
  strictEqual(render("{% if true %}\r\na\rb\r\n{% endif %}\r\n"), "a\nb\n");
});

Deno.test("compileChatTemplate() renders generation blocks without tags", () => {
  strictEqual(
    render(
      "{% for m in [1, 2] %}\n{% generation %}\n{{ m }}\n{% endgeneration %}\n{%- endfor %}",
    ),
    "1\n2\n",
  );
});

Deno.test("compileChatTemplate() formats strftime_now in the C locale from the injected clock", () => {
  strictEqual(
    render("{{ strftime_now('%d %b %Y %-d %B %H:%M:%S %a %A %y %j %p') }}"),
    "07 Mar 2026 7 March 15:04:05 Sat Saturday 26 066 PM",
  );
});

Deno.test("compileChatTemplate() prints tojson as Python's json.dumps", async (t) => {
  const args = parseJsonLossless(
    '{"b": 1.0, "10": 1e-7, "2": 1e20, "a": "東京"}',
  );
  await t.step("floats and insertion order, integer-like keys included", () => {
    strictEqual(
      render("{{ x | tojson }}", { x: args }),
      '{"b": 1.0, "10": 1e-07, "2": 1e+20, "a": "東京"}',
    );
  });
  await t.step("sort_keys, indent, separators, ensure_ascii", () => {
    strictEqual(
      render("{{ x | tojson(sort_keys=true, separators=(',', ':')) }}", {
        x: args,
      }),
      '{"10":1e-07,"2":1e+20,"a":"東京","b":1.0}',
    );
    strictEqual(render("{{ [1] | tojson(indent=2) }}"), "[\n  1\n]");
    strictEqual(render("{{ 'é' | tojson(ensure_ascii=true) }}"), '"\\u00e9"');
  });
  await t.step("non-finite floats", () => {
    strictEqual(
      render("{{ x | tojson }}", { x: [Infinity, -Infinity] }),
      "[Infinity, -Infinity]",
    );
  });
});

Deno.test("compileChatTemplate() throws TemplateRaisedError for raise_exception", () => {
  throws(
    () => render("{{ raise_exception('Roles must alternate') }}"),
    (e: unknown) =>
      e instanceof TemplateRaisedError && e.message === "Roles must alternate",
  );
});

Deno.test("compileChatTemplate() raises where jinja2's Undefined raises", async (t) => {
  const messages = [{ role: "user", content: "hi" }];
  await t.step("a missing item is undefined, not an error", () => {
    strictEqual(
      render(
        "[{{ messages[5] }}]{{ messages[5] is defined }}{{ messages[0].x is defined }}{% for m in nope %}x{% endfor %}",
        { messages },
      ),
      "[]FalseFalse",
    );
  });
  for (
    const source of [
      "{{ messages[5].role }}",
      "{{ messages[0].x.y }}",
      "{{ nope['k'] }}",
      "{{ nope() }}",
      "{{ nope + 1 }}",
      "{{ nope < 1 }}",
    ]
  ) {
    await t.step(`${source} raises TemplateUndefinedError`, () => {
      throws(() => render(source, { messages }), TemplateUndefinedError);
      // The local backend reports every TemplateRaisedError as a request the
      // server would reject.
      throws(() => render(source, { messages }), TemplateRaisedError);
    });
  }
});

Deno.test("compileChatTemplate() prints Python tuples and refuses iterators", () => {
  strictEqual(
    render("{{ d | dictsort }}{{ (d | dictsort)[0] }}{{ d.items() }}", {
      d: { b: 2, a: 1 },
    }),
    "[('a', 1), ('b', 2)]('a', 1)dict_items([('b', 2), ('a', 1)])",
  );
  // jinja2 prints `<generator object ... at 0x...>`: no stable text to match.
  throws(() => render("{{ [1] | select }}"), TemplateUnsupportedError);
  strictEqual(render("{{ 'y' if [] | select else 'n' }}"), "y");
});

Deno.test("compileChatTemplate() formats with % and str.format like Python", () => {
  strictEqual(
    render(
      "{{ '%s-%03d|%.2f' | format('a', 7, 2.345) }}|{{ '{0}{x:>3}{0}'.format(1, x='b') }}",
    ),
    "a-007|2.35|1  b1",
  );
});
