// Small templates written the way vLLM's examples/ templates use each
// construct, counted by the local backend (on the calling thread and in the
// count cache's worker) and by transformers as vLLM counts them
// (tools/transformers_oracle.py: the content format vLLM detects from
// jinja2's syntax tree, vLLM's preprocessing, apply_chat_template). Where
// transformers renders, the counts are equal; where it raises, the local
// backend refuses the request (TemplateRejectedError) as vLLM answers 400.
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { LocalBackend } from "../../src/backends/local/mod.ts";
import { TemplateRejectedError } from "../../src/core/errors.ts";
import { createCountCache } from "../../src/cache/mod.ts";
import { buildTokenizePayload } from "../../packages/engine/src/vllm/payload.ts";
import { detectContentFormat } from "../../packages/engine/src/vllm/preprocess.ts";
import { WEATHER_TOOL } from "../_kit/tokenizer_conversations.ts";
import { transformersCountAll } from "./_oracles.ts";

type Request = Record<string, unknown>;

interface Case {
  /** The construct, and the vLLM template that uses it so. */
  readonly name: string;
  readonly template: string;
  readonly requests: readonly Request[];
  readonly contentFormat?: "auto" | "string" | "openai";
  /** What the oracle must make of the requests, so a case cannot pass by refusing everything. */
  readonly expect: "renders" | "refuses" | "both";
}

const call = (args: unknown, id = "call_12345678") => ({
  id,
  type: "function",
  function: { name: "get_weather", arguments: args },
});
const user = (content: unknown) => ({ role: "user", content });
const PARTS = [{ type: "text", text: "Part one." }, {
  type: "text",
  text: "Part two.",
}];

/** One plain and one tool-using conversation, with string and part contents. */
const CHATS: readonly Request[] = [
  { messages: [user("Hello there")] },
  { messages: [{ role: "system", content: "Be brief." }, user(PARTS)] },
  {
    tools: [WEATHER_TOOL],
    messages: [
      user("Weather in Paris?"),
      {
        role: "assistant",
        content: null,
        tool_calls: [call('{"city": "Paris", "days": 2}')],
      },
      { role: "tool", tool_call_id: "call_12345678", content: "sunny" },
    ],
  },
];

const CASES: readonly Case[] = [
  {
    name:
      "a variable set from message.content and looped over is not a parts loop (mistral)",
    template: `{%- for message in messages %}
{%- if message.tool_calls is defined %}{% set tool_calls = message.tool_calls %}
{%- else %}{% set tool_calls = message.content %}{% endif %}
{%- if message.role == 'assistant' %}[CALLS]{% for tool_call in tool_calls %}{{ tool_call.function|tojson }}{% endfor %}
{%- else %}[{{ message.role }}] {{ message.content }}{% endif %}
{%- endfor %}`,
    requests: CHATS,
    expect: "renders",
  },
  {
    name:
      "a loop over message['content'] of a messages loop takes parts (llama3.2_json)",
    template: `{%- for message in messages %}<|{{ message.role }}|>
{%- if message.content is string %}{{ message.content }}
{%- else %}{% for content in message['content'] %}{% if content['type'] == 'text' %}{{ content['text'] }}{% endif %}{% endfor %}{% endif %}
{%- endfor %}`,
    requests: CHATS,
    expect: "renders",
  },
  {
    name:
      "a loop over a sliced copy of messages and its parts takes parts (gemma3_pythonic)",
    template:
      `{%- set loop_messages = messages[1:] if messages[0].role == 'system' else messages %}
{%- for message in loop_messages %}{{ message.role }}:
{%- for item in message.content | selectattr('type', 'equalto', 'text') %}{{ item.text }}{% endfor %}
{%- endfor %}`,
    requests: CHATS,
    expect: "renders",
  },
  {
    name: "--chat-template-content-format openai overrides the detection",
    template:
      `{%- for message in messages %}{{ message.role }}={{ message.content }};{% endfor %}`,
    requests: CHATS,
    contentFormat: "openai",
    expect: "renders",
  },
  {
    name: "--chat-template-content-format string overrides the detection",
    template:
      `{%- for message in messages %}{% for p in message.content %}[{{ p }}]{% endfor %}{% endfor %}`,
    requests: CHATS,
    contentFormat: "string",
    expect: "renders",
  },
  {
    name:
      "a loop over a string iterates its characters (llama3.2_json, tool content)",
    template: `{%- for message in messages %}
{%- if message.role == 'tool' %}<|ipython|>{% for content in message['content'] %}{{ content }}|{% endfor %}
{%- else %}{{ message.role }}: {{ message.content }}{% endif %}{% endfor %}`,
    requests: [CHATS[2]!, {
      messages: [user("q"), {
        role: "tool",
        tool_call_id: "call_12345678",
        content: PARTS,
      }],
    }],
    expect: "renders",
  },
  {
    name:
      "a loop over arguments given as a JSON string (llama3.2_pythonic, toolace)",
    template: `{%- for message in messages %}
{%- if message.tool_calls is defined %}{% for tool_call in message.tool_calls %}[{{ tool_call.function.name }}(
{%- for arg_name, arg_val in tool_call.function.arguments | items %}{{ arg_name }}={{ arg_val }}{% endfor %})]{% endfor %}
{%- else %}{{ message.role }}: {{ message.content }}{% endif %}{% endfor %}`,
    requests: [
      CHATS[2]!,
      {
        messages: [user("q"), {
          role: "assistant",
          content: null,
          tool_calls: [call('"a plain string"')],
        }],
      },
    ],
    expect: "both",
  },
  {
    name: "a loop over a mapping iterates its keys",
    template: `{%- for message in messages %}
{%- if message.tool_calls is defined %}{% for key in message.tool_calls[0].function.arguments %}<{{ key }}>{% endfor %}
{%- else %}{{ message.content }}{% endif %}{% endfor %}`,
    requests: [CHATS[2]!],
    expect: "renders",
  },
  {
    name: "a loop over None raises (tools is None without tools)",
    template:
      `{%- for tool in tools %}{{ tool.function.name }};{% endfor %}{% for message in messages %}{{ message.content }}{% endfor %}`,
    requests: [CHATS[0]!, CHATS[2]!],
    expect: "both",
  },
  {
    name:
      "`in` on strings and |length on strings and mappings; `in` on None raises",
    template:
      `{%- for message in messages %}{% if '<tool_call>' in message.content %}[T]{% endif %}{{ message.content | length }}/{{ message | length }};{% endfor %}{% if 'get_weather' in tools %}[W]{% endif %}`,
    requests: [
      { messages: [user("a <tool_call> b"), user("ünïcödé 👩‍💻")] },
      { tools: [WEATHER_TOOL], messages: [user("a")] },
    ],
    expect: "both",
  },
  {
    name: "items() of a string raises (arguments as a plain string)",
    template:
      `{%- for message in messages %}{% if message.tool_calls is defined %}{% for k, v in message.tool_calls[0].function.arguments.items() %}{{ k }}={{ v }}{% endfor %}{% endif %}{{ message.content }}{% endfor %}`,
    requests: [CHATS[2]!, {
      messages: [user("q"), {
        role: "assistant",
        content: null,
        tool_calls: [call('"plain"')],
      }],
    }],
    expect: "both",
  },
  {
    name: "{% with %} scopes its names (jinja2)",
    template:
      `{%- set prefix = 'out' %}{% for message in messages %}{% with prefix = message.role ~ '>', n = loop.index %}{{ prefix }}{{ n }}{{ message.content }}{% endwith %}{{ prefix }}{% endfor %}`,
    requests: CHATS.slice(0, 2),
    expect: "renders",
  },
  {
    name: "{% block %} renders in place, seeing the template's names only",
    template:
      `{%- set sep = '|' %}{% block system %}{% if messages[0].role == 'system' %}SYS{{ sep }}{% endif %}{% endblock %}{% for message in messages %}{% block turn scoped %}{{ message.role }}{{ sep }}{% endblock %}{% endfor %}`,
    requests: CHATS.slice(0, 2),
    expect: "renders",
  },
  {
    name: "string + None raises (granite_20b_fc: ' - ' + description)",
    template:
      `{%- if tools %}{% for tool in tools %}{{ tool.function.name + ' - ' + tool.function.description }}{% endfor %}{% endif %}{% for message in messages %}{{ message.content }}{% endfor %}`,
    requests: [CHATS[0]!, {
      tools: [{ type: "function", function: { name: "ping" } }],
      messages: [user("q")],
    }, { tools: [WEATHER_TOOL], messages: [user("q")] }],
    expect: "both",
  },
  {
    name: "int + str raises (llama4_pythonic)",
    template:
      `{%- for message in messages %}{{ loop.index + ': ' }}{{ message.content }}{% endfor %}`,
    requests: [CHATS[0]!],
    expect: "refuses",
  },
  {
    name: "len(None) raises (functiongemma: tools | length)",
    template:
      `{%- if tools is defined and tools | length > 0 %}TOOLS {% endif %}{% for message in messages %}{{ message.content }}{% endfor %}`,
    requests: [CHATS[0]!, { tools: [WEATHER_TOOL], messages: [user("q")] }],
    expect: "both",
  },
  {
    name:
      "an unknown filter raises where it runs (functiongemma: args | fromjson)",
    template:
      `{%- for message in messages %}{% if message.tool_calls is defined %}{% for tool_call in message.tool_calls %}{% set args = tool_call.function.arguments %}{% if args is string %}{% set args = args | fromjson %}{% endif %}{% for key, value in args.items() %}{{ key }}:{{ value }}{% endfor %}{% endfor %}{% else %}{{ message.content }}{% endif %}{% endfor %}`,
    requests: [CHATS[2]!, {
      messages: [user("q"), {
        role: "assistant",
        content: null,
        tool_calls: [call('"plain"')],
      }],
    }],
    expect: "both",
  },
  {
    name: "an unknown filter outside an if fails every request",
    template:
      `{%- for message in messages %}{{ message.content | to_nice_text }}{% endfor %}`,
    requests: [CHATS[0]!],
    expect: "refuses",
  },
  {
    name: "an unknown test raises where it runs",
    template:
      `{%- for message in messages %}{% if message.role == 'tool' %}{% if message.content is json %}J{% endif %}{% endif %}{{ message.content }}{% endfor %}`,
    requests: [CHATS[0]!, CHATS[2]!],
    expect: "both",
  },
  {
    name: "the sandbox refuses dict.update (hunyuan_a13b)",
    template:
      `{%- set context = {'has_head': true} %}{% for message in messages %}{% if message.role == 'user' %}{% set _ = context.update({'has_head': false}) %}{% endif %}{{ message.content }}{% endfor %}`,
    requests: [CHATS[0]!],
    expect: "refuses",
  },
  {
    name: "raise_exception refuses (mistral: tool call ids)",
    template:
      `{%- for message in messages %}{% if message.tool_calls is defined %}{% for tool_call in message.tool_calls %}{% if tool_call.id | length < 9 %}{{ raise_exception('Tool call IDs should be alphanumeric strings with length >= 9!') }}{% endif %}{% endfor %}{% endif %}{{ message.content }}{% endfor %}`,
    requests: [CHATS[2]!, {
      messages: [user("q"), {
        role: "assistant",
        content: null,
        tool_calls: [call({}, "c1")],
      }],
    }],
    expect: "both",
  },
];

type Outcome = number | "refused" | `failed: ${string}`;

async function ours(
  backend: LocalBackend,
  requests: readonly Request[],
): Promise<Outcome[]> {
  const outcomes: Outcome[] = [];
  for (const request of requests) {
    try {
      outcomes.push(
        await backend.count(structuredClone(request), { contextLength: 32768 }),
      );
    } catch (error) {
      outcomes.push(
        error instanceof TemplateRejectedError
          ? "refused"
          : `failed: ${(error as Error).message}`,
      );
    }
  }
  return outcomes;
}

Deno.test("LocalBackend.count() equals transformers, or refuses where it raises, on each construct of vLLM's templates", async (t) => {
  // One token per byte: any difference in the render shows in the count.
  const dir = fileURLToPath(
    new URL("../fixtures/byte_level/", import.meta.url),
  );
  await using cache = createCountCache();
  const answers = await transformersCountAll(CASES.map((c) => ({
    dir,
    modelType: "gpt2",
    chatTemplate: c.template,
    contentFormat: c.contentFormat ?? "auto",
    requests: c.requests.map((r) => buildTokenizePayload(structuredClone(r))),
  })));
  for (const [i, c] of CASES.entries()) {
    await t.step(c.name, async () => {
      const expected = answers[i]!;
      const wanted: Outcome[] = expected.counts.map((count) =>
        typeof count === "number" ? count : "refused"
      );
      const rendered = wanted.filter((w) => w !== "refused").length;
      if (c.expect === "renders") strictEqual(rendered, wanted.length);
      if (c.expect === "refuses") strictEqual(rendered, 0);
      if (c.expect === "both") ok(rendered > 0 && rendered < wanted.length);
      if ((c.contentFormat ?? "auto") === "auto") {
        strictEqual(detectContentFormat(c.template), expected.formats[0]);
      }
      const options = {
        dir,
        chatTemplate: c.template,
        ...(c.contentFormat
          ? { chatTemplateContentFormat: c.contentFormat }
          : {}),
      };
      await using thread = new LocalBackend({ ...options, cache: null });
      await using worker = new LocalBackend({ ...options, cache });
      deepStrictEqual(await ours(thread, c.requests), wanted, "thread");
      deepStrictEqual(await ours(worker, c.requests), wanted, "worker");
    });
  }
});
