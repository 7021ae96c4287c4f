// Renders a corpus of templates x contexts with compileChatTemplate and with
// Python jinja2 (tools/jinja2_oracle.py, see ./_oracles.ts) and requires byte-identical output.
import { deepStrictEqual, ok as assert } from "node:assert/strict";
import {
  compileChatTemplate,
  parseJsonLossless,
  TemplateRaisedError,
  TemplateUndefinedError,
} from "../../packages/engine/src/jinja/chat_template.ts";
import { type Jinja2Outcome, jinja2Render } from "./_oracles.ts";

const NOW = "2026-03-07T15:04:05";
const dir = new URL("../fixtures/templates/", import.meta.url);

type Outcome = Jinja2Outcome;

const oracle = jinja2Render;

function ours(template: string, contextJson: string, key: string): Outcome {
  const now = () => new Date(NOW);
  try {
    const all = parseJsonLossless(contextJson) as Map<string, unknown>;
    const context = all.get(key) as Map<string, unknown>;
    return {
      text: compileChatTemplate(template, { now }).render(
        Object.fromEntries(context),
      ),
    };
  } catch (error) {
    if (error instanceof TemplateRaisedError) {
      return { error: { type: "TemplateError", message: error.message } };
    }
    throw error;
  }
}

async function corpus(): Promise<
  { templates: Map<string, string>; contexts: Map<string, string> }
> {
  const templates = new Map<string, string>();
  const contexts = new Map<string, string>();
  for await (const entry of Deno.readDir(dir)) {
    if (!entry.isFile) continue;
    const text = await Deno.readTextFile(new URL(entry.name, dir));
    if (entry.name.endsWith(".jinja")) templates.set(entry.name, text);
    if (entry.name.endsWith(".json")) {
      for (const name of Object.keys(JSON.parse(text))) {
        contexts.set(`${entry.name}#${name}`, text);
      }
    }
  }
  return { templates, contexts };
}

Deno.test("compileChatTemplate() renders byte-identical to Python jinja2", async (t) => {
  const { templates, contexts } = await corpus();
  // Context JSON goes through each side's own reader: Python's json.loads
  // and parseJsonLossless (key order, integral floats).
  const jobs: { name: string; template: string; context: string }[] = [];
  for (const [tname, template] of [...templates].sort()) {
    for (const [cname, context] of [...contexts].sort()) {
      jobs.push({ name: `${tname} x ${cname}`, template, context });
    }
  }
  const expected = await oracle(jobs.map((j) => ({
    template: j.template,
    context_json: j.context,
    context_key: j.name.split("#")[1],
    now: NOW,
  })));
  const perFamily = new Map<string, [number, number]>();
  for (const [i, job] of jobs.entries()) {
    const family = job.name.split(/[._]/)[0]!;
    const tally = perFamily.get(family) ?? [0, 0];
    const actual = ours(job.template, job.context, job.name.split("#")[1]!);
    tally[1]++;
    if (JSON.stringify(actual) === JSON.stringify(expected[i])) tally[0]++;
    perFamily.set(family, tally);
    await t.step(job.name, () => deepStrictEqual(actual, expected[i]));
  }
  for (const [family, [ok, all]] of perFamily) {
    console.log(`jinja2 oracle: ${family}: ${ok}/${all} identical`);
  }
});

// One-line templates, each exercising a filter, test, method or undefined
// use: where jinja2 renders, the text must match; where it raises, we must
// raise too (an UndefinedError as TemplateUndefinedError, which the local
// backend reports as a rejected request rather than estimating).
Deno.test("filters, tests, str methods and undefined values match jinja2", async (t) => {
  const file = new URL("cases/filters.json", dir);
  const text = await Deno.readTextFile(file);
  // "unsupported" lists what jinja2 renders and we refuse: the count fails
  // (never a TemplateRaisedError, which would report a rejected request).
  const { cases, unsupported } = JSON.parse(text) as {
    cases: string[];
    unsupported: string[];
  };
  const context = Object.fromEntries(
    (parseJsonLossless(text) as Map<string, Map<string, unknown>>)
      .get("context")!,
  );
  const expected = await oracle(cases.map((template) => ({
    template,
    context_json: text,
    context_key: "context",
    now: NOW,
  })));
  let raised = 0;
  for (const [i, template] of cases.entries()) {
    await t.step(template, () => {
      const want = expected[i]!;
      let got: Outcome;
      try {
        got = { text: compileChatTemplate(template).render(context) };
      } catch (error) {
        // Python prints iterators and methods with a memory address: no
        // stable text to match, so raising is the right answer.
        if ("text" in want && / at 0x[0-9a-f]+>/.test(want.text)) {
          return;
        }
        if ("text" in want && unsupported.includes(template)) {
          assert(!(error instanceof TemplateRaisedError), String(error));
          return;
        }
        if ("text" in want) throw error;
        got = want;
        raised++;
        if (want.error.type === "UndefinedError") {
          assert(error instanceof TemplateUndefinedError, String(error));
        }
      }
      deepStrictEqual(got, want);
    });
  }
  assert(raised > 10 && raised < cases.length / 4, `${raised} raised`);
});
