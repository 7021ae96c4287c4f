// Covers: packages/engine/src/vllm/preprocess.ts, packages/engine/src/vllm/release.ts, src/backends/local/local_backend.ts
import { ok, rejects, strictEqual, throws } from "node:assert/strict";
import { dirname } from "node:path";
import { budget } from "../../../mod.ts";
import { LocalBackend } from "../../../src/backends/local/mod.ts";
import { TemplateRejectedError } from "../../../src/core/errors.ts";
import { RequestRejectedError } from "../../../packages/engine/src/common/errors.ts";
import {
  detectContentFormat,
  templateContext,
} from "../../../packages/engine/src/vllm/preprocess.ts";
import { compileChatTemplate } from "../../../packages/engine/src/jinja/chat_template.ts";
import { buildTokenizePayload } from "../../../packages/engine/src/vllm/payload.ts";
import { vllmRules } from "../../../packages/engine/src/vllm/release.ts";
import { MODEL_FILES } from "../../_kit/model_files.ts";

const QWEN3 = dirname(
  MODEL_FILES.find((model) => model.family === "qwen3")!.tokenizerPath,
);
const C = { contextLength: 32768 };
const DUMP = "{{ messages | tojson }}";

/** Renders `source` with the context vLLM `version` builds from `request`. */
function render(
  source: string,
  request: Record<string, unknown>,
  version?: string,
): string {
  const rules = vllmRules(version);
  const { context } = templateContext(buildTokenizePayload(request, rules), {
    specialTokens: {},
    contentFormat: detectContentFormat(source),
    rules,
  });
  return compileChatTemplate(source).render(context);
}

function rejectsRequest(request: Record<string, unknown>): void {
  throws(() => render(DUMP, request), (error: unknown) => {
    ok(error instanceof RequestRejectedError);
    ok(!error.message.includes("secret"), error.message);
    return true;
  });
}

const assistant = (fields: Record<string, unknown>) => ({
  messages: [{ role: "assistant", content: "a", ...fields }],
});

Deno.test("templateContext() reads the reasoning fields as the release does", async (t) => {
  await t.step(
    "0.16 on: reasoning_content alone never reaches the template",
    () => {
      strictEqual(
        render(DUMP, assistant({ reasoning_content: "r" })),
        '[{"role": "assistant", "content": "a"}]',
      );
      strictEqual(
        render(DUMP, assistant({ reasoning: "x", reasoning_content: "r" })),
        '[{"role": "assistant", "content": "a", "reasoning": "x", "reasoning_content": "x"}]',
      );
    },
  );
  await t.step("0.16 on: an empty reasoning is a value, not missing", () => {
    strictEqual(
      render(DUMP, assistant({ reasoning: "", reasoning_content: "r" })),
      '[{"role": "assistant", "content": "a", "reasoning": "", "reasoning_content": ""}]',
    );
  });
  await t.step("before 0.16: Python's reasoning or reasoning_content", () => {
    strictEqual(
      render(DUMP, assistant({ reasoning_content: "r" }), "0.15.1"),
      '[{"role": "assistant", "content": "a", "reasoning": "r", "reasoning_content": "r"}]',
    );
    strictEqual(
      render(
        DUMP,
        assistant({ reasoning: "", reasoning_content: "r" }),
        "0.15.1",
      ),
      '[{"role": "assistant", "content": "a", "reasoning": "r", "reasoning_content": "r"}]',
    );
    strictEqual(
      render(DUMP, assistant({ reasoning: "" }), "0.15.1"),
      '[{"role": "assistant", "content": "a"}]',
    );
  });
});

Deno.test("templateContext() keeps an empty tool_calls list before 0.14", () => {
  const request = assistant({ tool_calls: [] });
  strictEqual(
    render(DUMP, request, "0.13.0"),
    '[{"role": "assistant", "content": "a", "tool_calls": []}]',
  );
  strictEqual(render(DUMP, request), '[{"role": "assistant", "content": "a"}]');
});

Deno.test("templateContext() joins a tool result's text parts with \\n from 0.20", () => {
  // A template that loops over content parts gets part lists, except for tool results.
  const source =
    "{% for m in messages %}{% if m.content is string %}[{{ m.content }}]{% else %}{% for p in m.content %}<{{ p.text }}>{% endfor %}{% endif %}{% endfor %}";
  const request = {
    messages: [
      { role: "user", content: [{ type: "text", text: "u" }] },
      {
        role: "tool",
        tool_call_id: "1",
        content: [{ type: "text", text: "a" }, { type: "text", text: "b" }],
      },
    ],
  };
  strictEqual(render(source, request), "<u>[a\nb]");
  strictEqual(render(source, request, "0.19.0"), "<u><a><b>");
});

Deno.test("templateContext() rejects an empty conversation as transformers does", () => {
  rejectsRequest({ messages: [] });
});

Deno.test("templateContext() rejects tool-call arguments json.loads refuses", async (t) => {
  const withArgs = (args: unknown) => ({
    messages: [{
      role: "assistant",
      content: null,
      tool_calls: [{
        id: "1",
        type: "function",
        function: { name: "f", arguments: args },
      }],
    }],
  });
  await t.step("text that is not JSON", () => {
    for (
      const args of [
        "secret not json",
        '{"city": "Par',
        "   ",
        "{'a': 1}",
        '{"a": 1} trailing',
      ]
    ) rejectsRequest(withArgs(args));
  });
  await t.step("a value that is not a string, an object or a list", () => {
    rejectsRequest(withArgs(5));
    rejectsRequest(withArgs(true));
  });
  await t.step(
    "JSON that is not an object still parses, as json.loads does",
    () => {
      const source =
        "{{ messages[0].tool_calls[0].function.arguments | tojson }}";
      strictEqual(render(source, withArgs("5")), "5");
      strictEqual(render(source, withArgs(' [1, "x"] ')), '[1, "x"]');
    },
  );
  await t.step("integers beyond 2^53 keep their text", () => {
    const source =
      "{{ messages[0].tool_calls[0].function.arguments | tojson }}|{{ messages[0].tool_calls[0].function.arguments.id }}";
    strictEqual(
      render(
        source,
        withArgs('{"id": 12345678901234567890, "n": -9007199254740993}'),
      ),
      '{"id": 12345678901234567890, "n": -9007199254740993}|12345678901234567890',
    );
  });
  await t.step("NaN and Infinity parse as Python floats", () => {
    const source =
      "{% set a = messages[0].tool_calls[0].function.arguments %}{{ a | tojson }}|{{ a.x }} {{ a.y }} {{ a.z }}";
    strictEqual(
      render(source, withArgs('{"x": NaN, "y": Infinity, "z": -Infinity}')),
      '{"x": NaN, "y": Infinity, "z": -Infinity}|nan inf -inf',
    );
  });
});

Deno.test("LocalBackend counts reasoning as the vLLM release it mirrors", async (t) => {
  // Qwen3's template prints `reasoning_content` of the turns after the last query.
  const request = {
    messages: [
      { role: "user", content: "What is 2+2?" },
      {
        role: "assistant",
        content: "4",
        reasoning_content: "Two and two make four.",
      },
      { role: "user", content: "And 3+3?" },
      { role: "assistant", content: "6", reasoning_content: "Three twice." },
    ],
    add_generation_prompt: false,
  };
  const without = {
    ...request,
    messages: request.messages.map(({ reasoning_content: _, ...rest }) => rest),
  };
  const renamed = {
    ...request,
    messages: request.messages.map(({ reasoning_content, ...rest }) =>
      reasoning_content === undefined
        ? rest
        : { ...rest, reasoning: reasoning_content }
    ),
  };
  await using newest = new LocalBackend({ dir: QWEN3, cache: null });
  await using older = new LocalBackend({
    dir: QWEN3,
    cache: null,
    vllmVersion: "0.15.1",
  });
  await t.step("0.16 on: reasoning_content alone counts nothing", async () => {
    strictEqual(await newest.count(request, C), await newest.count(without, C));
    ok(await newest.count(renamed, C) > await newest.count(without, C));
  });
  await t.step("0.15: it counts as reasoning", async () => {
    strictEqual(await older.count(request, C), await older.count(renamed, C));
    ok(await older.count(request, C) > await older.count(without, C));
  });
  await t.step("an unknown release is refused at construction", () => {
    throws(
      () => new LocalBackend({ dir: QWEN3, vllmVersion: "0.11.0" }),
      RangeError,
    );
    throws(
      () => new LocalBackend({ dir: QWEN3, vllmVersion: "newest" }),
      RangeError,
    );
  });
});

Deno.test("budget() leaves a request vLLM refuses unchanged", async (t) => {
  await using backend = new LocalBackend({ dir: QWEN3, cache: null });
  const refused = [
    { messages: [] },
    {
      messages: [{
        role: "assistant",
        content: null,
        tool_calls: [{
          id: "1",
          type: "function",
          function: { name: "f", arguments: "{truncated" },
        }],
      }],
    },
  ];
  for (const request of refused) {
    await t.step(JSON.stringify(request).slice(0, 60), async () => {
      await rejects(backend.count(request, C), TemplateRejectedError);
      const result = await budget(request, {
        window: 8000,
        contextLength: C.contextLength,
        backend,
      });
      strictEqual(result.action, "unchanged");
      strictEqual(result.request, request);
    });
  }
});
