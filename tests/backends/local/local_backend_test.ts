// Covers: src/backends/local/local_backend.ts, packages/engine/src/vllm/preprocess.ts, packages/engine/src/jinja/content_format.ts
import {
  deepStrictEqual,
  ok,
  rejects,
  strictEqual,
  throws,
} from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { budget } from "../../../mod.ts";
import { LocalBackend } from "../../../src/backends/local/mod.ts";
import { CountError, TemplateRejectedError } from "../../../src/core/errors.ts";
import {
  continueFinalMessage,
  detectContentFormat,
  templateContext,
} from "../../../packages/engine/src/vllm/preprocess.ts";
import {
  compileChatTemplate,
  PyFloat,
} from "../../../packages/engine/src/jinja/chat_template.ts";
import { buildTokenizePayload } from "../../../packages/engine/src/vllm/payload.ts";
import { EngineError } from "../../../packages/engine/src/common/errors.ts";
import { createCountCache } from "../../../src/cache/mod.ts";
import { captureLogs } from "../../_kit/log_capture.ts";

const DIR = fileURLToPath(
  new URL("../../fixtures/model_folder/", import.meta.url),
);
const C = { contextLength: 8192 };
const tokens = { bos_token: "<s>" };
const HI = { role: "user", content: "" };

/** Renders `source` with the context built from `request`, as the backend does. */
function render(source: string, request: Record<string, unknown>): string {
  const { context } = templateContext(buildTokenizePayload(request), {
    specialTokens: tokens,
    contentFormat: detectContentFormat(source),
  });
  return compileChatTemplate(source).render(context);
}

Deno.test("detectContentFormat() finds loops over message content as vLLM's syntax-tree rule does", () => {
  for (
    const source of [
      "{% for m in messages %}{% for p in m['content'] %}{% endfor %}{% endfor %}",
      "{% for m in messages if m.role %}{% for p in m.content | selectattr('type', 'eq', 'text') %}{% endfor %}{% endfor %}",
      "{% set rest = messages[1:] %}{% set l = rest | list %}{% for m in l %}{% for p in m.content[1:] %}{% endfor %}{% endfor %}",
      "{% macro render(content) %}{% for p in content %}{% endfor %}{% endmacro %}",
    ]
  ) strictEqual(detectContentFormat(source), "openai", source);
  for (
    const source of [
      "{% for m in messages %}{{ m['content'] }}{% endfor %}",
      // Not a message of a loop over messages.
      '{%- for part in message["content"] -%}{% endfor %}',
      // A variable set from the content is not followed (vLLM's rule).
      "{% for m in messages %}{% set calls = m.content %}{% for c in calls %}{% endfor %}{% endfor %}",
      "{% for m in messages %}{% for p in m.content is not string %}{% endfor %}{% endfor %}",
      // vLLM asserts loop targets are names and falls back.
      "{% for m in messages %}{% for a, b in m.content %}{% endfor %}{% for p in m.content %}{% endfor %}{% endfor %}",
      "{% set ns.l = messages %}{% for m in messages %}{% for p in m.content %}{% endfor %}{% endfor %}",
      // A template that does not parse gets the default.
      "{% for m in messages %}{% for p in m.content %}{% endfor %}",
    ]
  ) strictEqual(detectContentFormat(source), "string", source);
});

Deno.test("LocalBackend's chatTemplateContentFormat overrides the detected format", async (t) => {
  const chatTemplate =
    "{% for m in messages %}{{ m.content is string }}{% endfor %}";
  const request = { messages: [HI] };
  // One token per byte: the render comes back as it was.
  const dir = fileURLToPath(
    new URL("../../fixtures/byte_level/", import.meta.url),
  );
  const render = async (format?: "auto" | "string" | "openai") => {
    await using backend = new LocalBackend({
      dir,
      chatTemplate,
      cache: null,
      ...(format === undefined ? {} : { chatTemplateContentFormat: format }),
    });
    return await backend.tokenize({ ...request, add_generation_prompt: false })
      .then((ids) => backend.detokenize(ids));
  };
  await t.step("auto detects string content", async () => {
    strictEqual(await render(), "True");
    strictEqual(await render("auto"), "True");
  });
  await t.step("openai gives parts", async () => {
    strictEqual(await render("openai"), "False");
  });
  await t.step("a bad value fails at construction", () => {
    throws(
      () =>
        new LocalBackend({
          dir: DIR,
          chatTemplateContentFormat: "parts" as "auto",
        }),
      TypeError,
    );
  });
});

Deno.test("templateContext() preprocesses messages as vLLM does", async (t) => {
  const dump = "{{ messages | tojson }}";
  await t.step("text parts are joined with \\n; null content is ''", () => {
    const request = {
      messages: [
        {
          role: "user",
          content: [{ type: "text", text: "a" }, { type: "text", text: "b" }],
        },
        { role: "assistant", content: null, extra: 1 },
      ],
    };
    strictEqual(
      render(dump, request),
      '[{"role": "user", "content": "a\\nb"}, {"role": "assistant", "content": ""}]',
    );
  });
  await t.step("a template looping over content gets part lists", () => {
    const source =
      "{% for m in messages %}{% for p in m.content %}[{{ p.type }}:{{ p.text }}]{% endfor %}|{% endfor %}";
    const request = {
      messages: [
        { role: "user", content: "hi" },
        { role: "assistant", content: null },
        { role: "user", content: [{ type: "text", text: "x" }] },
      ],
    };
    strictEqual(render(source, request), "[text:hi]||[text:x]|");
  });
  await t.step("tool-call arguments are parsed losslessly", () => {
    const source =
      "{% for c in messages[0].tool_calls %}{{ c.function.arguments | tojson }};{% endfor %}";
    const call = (args: unknown) => ({
      id: "1",
      type: "function",
      function: { name: "f", arguments: args },
    });
    const request = {
      messages: [{
        role: "assistant",
        content: null,
        tool_calls: [
          call('{"b": 1.0, "10": 750.0, "2": 1e-07}'),
          call(""),
          call({ a: 3 }),
        ],
      }],
    };
    strictEqual(
      render(source, request),
      '{"b": 1.0, "10": 750.0, "2": 1e-07};{};{"a": 3};',
    );
  });
  await t.step("empty tool_calls are dropped", () => {
    const request = {
      messages: [{ role: "assistant", content: "x", tool_calls: [] }],
    };
    strictEqual(
      render(dump, request),
      '[{"role": "assistant", "content": "x"}]',
    );
  });
  await t.step("assistant reasoning reaches both names", () => {
    const request = {
      messages: [
        { role: "assistant", content: "x", reasoning: "r" },
        { role: "assistant", content: "z", reasoning_content: "dropped" },
        { role: "user", content: "y", reasoning: "ignored" },
      ],
    };
    strictEqual(
      render(dump, request),
      '[{"role": "assistant", "content": "x", "reasoning": "r", "reasoning_content": "r"}, {"role": "assistant", "content": "z"}, {"role": "user", "content": "y"}]',
    );
  });
  await t.step(
    "tools are reshaped with null description and parameters",
    () => {
      const request = {
        messages: [{ role: "user", content: "x" }],
        tools: [
          { type: "function", function: { strict: true, name: "f" } },
          {
            type: "function",
            function: { name: "g", parameters: { type: "object" } },
          },
        ],
      };
      strictEqual(
        render("{{ tools | tojson }}", request),
        '[{"type": "function", "function": {"name": "f", "description": null, "parameters": null, "strict": true}}, {"type": "function", "function": {"name": "g", "description": null, "parameters": {"type": "object"}}}]',
      );
    },
  );
  await t.step("the context holds the special tokens and the kwargs", () => {
    const source =
      "{{ bos_token }}|{{ tools }}|{{ documents }}|{{ add_generation_prompt }}|{{ reasoning_effort }}|{{ enable_thinking is defined }}";
    const request = {
      messages: [{ role: "user", content: "x" }],
      reasoning_effort: "none",
      chat_template_kwargs: { documents: [] },
    };
    // vLLM passes the effort itself; it derives nothing from it.
    strictEqual(render(source, request), "<s>|None|[]|True|none|False");
  });
  await t.step("media parts are refused", () => {
    for (const type of ["image_url", "input_audio", "video_url"]) {
      throws(
        () =>
          render(dump, {
            messages: [{ role: "user", content: [{ type, [type]: {} }] }],
          }),
        EngineError,
      );
    }
  });
  await t.step(
    "continue_final_message with add_generation_prompt is refused",
    () => {
      throws(
        () =>
          render(dump, {
            messages: [{ role: "user", content: "x" }],
            continue_final_message: true,
          }),
        EngineError,
      );
    },
  );
});

Deno.test("continueFinalMessage() cuts after the final message as transformers does", () => {
  strictEqual(
    continueFinalMessage("<a>Hi there<end>", "Hi there"),
    "<a>Hi there",
  );
  strictEqual(continueFinalMessage("<a>Hi<end>", "Hi  "), "<a>Hi");
  strictEqual(
    continueFinalMessage("<a>x<end>", [{ type: "text", text: "x" }]),
    "<a>x",
  );
  throws(() => continueFinalMessage("<a>", "missing"), EngineError);
});

Deno.test("LocalBackend.count() counts each request kind", async (t) => {
  await using cache = createCountCache({ inProcess: true });
  const backend = new LocalBackend({ dir: DIR, cache });
  const chat = {
    messages: [{ role: "user", content: "hello world" }],
  };
  await t.step(
    "chat: the template's BOS, no added special tokens",
    async () => {
      // "<s>" + "hello world" = 3 tokens.
      strictEqual(await backend.count(chat, C), 3);
    },
  );
  await t.step("completion: special tokens unless turned off", async () => {
    const prompt = { prompt: "hello world" };
    strictEqual(await backend.count(prompt, { ...C, kind: "completion" }), 3);
    strictEqual(
      await backend.count({ ...prompt, add_special_tokens: false }, {
        ...C,
        kind: "completion",
      }),
      2,
    );
  });
  await t.step("responses: converted to chat", async () => {
    strictEqual(
      await backend.count({ input: "hello world" }, {
        ...C,
        kind: "responses",
      }),
      3,
    );
  });
  await t.step(
    "a repeated chat tokenizes nothing; completions keep whole counts",
    async () => {
      // The Responses request rendered the chat's payload again, and so
      // does counting `chat` again: no piece is tokenized or stored, and
      // (pieces make a repeat cheap) no whole count is kept for a chat.
      const before = await cache.stats();
      strictEqual(before.hits, 0);
      await backend.count(chat, C);
      const after = await cache.stats();
      strictEqual(after.segmentMisses, before.segmentMisses);
      strictEqual(after.entries, before.entries);
      strictEqual(after.misses, before.misses);
      // A completion tokenizes its whole prompt: its count is kept.
      await backend.count({ prompt: "hello world" }, {
        ...C,
        kind: "completion",
      });
      strictEqual((await cache.stats()).hits, 1);
    },
  );
  await t.step("media parts fail the count with a CountError", async () => {
    const image = { type: "image_url", image_url: { url: "data:," } };
    await rejects(
      backend.count({ messages: [{ role: "user", content: [image] }] }, C),
      (error: unknown) =>
        error instanceof CountError &&
        !(error instanceof TemplateRejectedError),
    );
  });
  await t.step("a bad contextLength is a RangeError", async () => {
    await rejects(backend.count(chat, { contextLength: 0 }), RangeError);
  });
  await backend[Symbol.asyncDispose]();
  await rejects(backend.count(chat, C), CountError);
});

Deno.test("LocalBackend uses an explicit chat template, inline or from a file", async (t) => {
  await t.step("inline text", async () => {
    const backend = new LocalBackend({
      dir: DIR,
      cache: null,
      chatTemplate: "{{ bos_token }}{{ bos_token }}hello",
    });
    strictEqual(await backend.count({ messages: [HI] }, C), 3);
  });
  await t.step("a file path", async () => {
    const file = fileURLToPath(
      new URL("../../fixtures/local_template.jinja", import.meta.url),
    );
    const backend = new LocalBackend({
      dir: DIR,
      cache: null,
      chatTemplate: file,
    });
    strictEqual(await backend.count({ messages: [HI] }, C), 4);
  });
});

Deno.test("LocalBackend reports a template that raises as TemplateRejectedError", async (t) => {
  const backend = new LocalBackend({
    dir: DIR,
    cache: null,
    chatTemplate: "{{ raise_exception('Conversation roles must alternate') }}",
  });
  const request = { messages: [{ role: "user", content: "secret words" }] };
  await t.step("count() rejects with the distinct error", async () => {
    await rejects(backend.count(request, C), (error: unknown) => {
      ok(error instanceof TemplateRejectedError);
      ok(error instanceof CountError);
      ok(!error.message.includes("secret"));
      return true;
    });
  });
  await t.step("budget() leaves the request unchanged", async () => {
    const result = await budget(request, {
      window: 8000,
      contextLength: 8192,
      backend,
    });
    strictEqual(result.action, "unchanged");
    strictEqual(result.request, request);
  });
});

Deno.test("LocalBackend checks the SHA-256 of tokenizer.json on every count", async () => {
  const backend = new LocalBackend({
    dir: DIR,
    cache: null,
    expectedSha256: "0".repeat(64),
  });
  const request = { messages: [{ role: "user", content: "hello" }] };
  for (let i = 0; i < 2; i++) {
    await rejects(backend.count(request, C), (error: unknown) => {
      ok(error instanceof CountError);
      ok(error.message.includes("SHA-256"));
      return true;
    });
  }
  throws(
    () => new LocalBackend({ dir: DIR, expectedSha256: "abc" }),
    TypeError,
  );
});

Deno.test("LocalBackend loads the files once, lazily, for concurrent first counts", async (t) => {
  await t.step("construction reads nothing", () => {
    new LocalBackend({ dir: "/nonexistent/model" });
  });
  await t.step(
    "concurrent first counts share one load, logged with hashes",
    async () => {
      await using logs = await captureLogs();
      const backend = new LocalBackend({ dir: DIR, cache: null });
      const request = { messages: [{ role: "user", content: "hello" }] };
      const counts = await Promise.all(
        [1, 2, 3].map(() => backend.count(request, C)),
      );
      deepStrictEqual(counts, [2, 2, 2]);
      await backend.count(request, C);
      const loads = logs.lines.filter((line) =>
        line.includes("Loaded the tokenizer files")
      );
      strictEqual(loads.length, 1);
      ok(/tokenizerSha256":"[0-9a-f]{64}"/.test(loads[0]!));
      ok(!loads[0]!.includes("hello"));
      await backend[Symbol.asyncDispose]();
    },
  );
  await t.step("a read error is retried by the next count", async () => {
    const backend = new LocalBackend({
      dir: "/nonexistent/model",
      cache: null,
    });
    await rejects(backend.count({ messages: [] }, C), CountError);
    await rejects(backend.count({ messages: [] }, C), CountError);
  });
});

Deno.test("PyFloat arguments survive the lossless reader", () => {
  const { context } = templateContext(
    buildTokenizePayload({
      messages: [{
        role: "assistant",
        tool_calls: [{ function: { name: "f", arguments: '{"x": 2.0}' } }],
      }],
    }),
    { specialTokens: {}, contentFormat: "string" },
  );
  const messages = context.messages as {
    tool_calls: { function: { arguments: Map<string, unknown> } }[];
  }[];
  ok(
    messages[0]!.tool_calls[0]!.function.arguments.get("x") instanceof PyFloat,
  );
});

Deno.test("LocalBackend refuses what jinja2 raises and names what it cannot render, in the worker as on the thread", async (t) => {
  const dir = fileURLToPath(
    new URL("../../fixtures/byte_level/", import.meta.url),
  );
  const request = { messages: [{ role: "user", content: "hi" }] };
  await using cache = createCountCache();
  for (const mode of ["thread", "worker"] as const) {
    await t.step(
      `${mode}: a Python TypeError is a TemplateRejectedError`,
      async () => {
        await using backend = new LocalBackend({
          dir,
          chatTemplate:
            "{% for m in messages %}{{ m.content + none }}{% endfor %}",
          cache: mode === "worker" ? cache : null,
        });
        await rejects(backend.count(request, C), TemplateRejectedError);
      },
    );
    // Warned once per construct and process: each mode uses its own filter.
    const filter = mode === "thread" ? "wordwrap" : "urlize";
    await t.step(
      `${mode}: an unsupported construct fails the count, logged once by name`,
      async () => {
        await using logs = await captureLogs();
        await using backend = new LocalBackend({
          dir,
          chatTemplate:
            `{% for m in messages %}{{ m.content | ${filter} }}{% endfor %}`,
          cache: mode === "worker" ? cache : null,
        });
        for (let i = 0; i < 2; i++) {
          await rejects(backend.count(request, C), (error) => {
            ok(error instanceof CountError);
            ok(!(error instanceof TemplateRejectedError));
            ok(error.message.includes(`the filter '${filter}'`), error.message);
            return true;
          });
        }
        const warnings = logs.records.filter((r) =>
          r.level === "warning" &&
          r.properties.construct === `the filter '${filter}'`
        );
        strictEqual(warnings.length, 1);
        ok(!logs.lines.some((line) => line.includes('"hi"')));
      },
    );
  }
});
