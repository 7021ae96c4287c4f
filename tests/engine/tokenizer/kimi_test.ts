// Covers: packages/engine/src/tokenizer/kimi.ts, packages/engine/src/tokenizer/remote_tokenizer.ts, packages/engine/src/tokenizer/files.ts, packages/engine/src/model/chat_render.ts, packages/engine/src/model/tool_sort.ts
// A Kimi K2 folder (tiktoken.model, tokenization_kimi.py named by
// tokenizer_config.json's auto_map, no tokenizer.json) counts locally: its
// added tokens split the text, its tool schemas are key-sorted before the
// template; a folder whose tokenizer is remote code the engine does not
// mirror is refused in one line naming the file and the vllm backend.
import { deepStrictEqual, ok, rejects, strictEqual } from "node:assert/strict";
import { join } from "node:path";
import { EngineError } from "../../../packages/engine/src/common/errors.ts";
import { createEngine } from "../../../packages/engine/src/model/operations.ts";
import { kimiSplit } from "../../../packages/engine/src/tokenizer/kimi.ts";
import { deepSortDict } from "../../../packages/engine/src/model/tool_sort.ts";
import { buildTokenizePayload } from "../../../packages/engine/src/vllm/payload.ts";

/** The parts of tokenization_kimi.py the engine reads, in a stub of the tests' own. */
const KIMI_SOURCE = String.raw`
class TikTokenTokenizer(PreTrainedTokenizer):
    num_reserved_special_tokens = 256
    pat_str = "|".join([
        r"""[\p{Han}]+""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ])

    def apply_chat_template(self, conversation, tools=None, **kwargs):
        tools = deep_sort_dict(tools)
        return super().apply_chat_template(conversation, tools=tools, **kwargs)
`;

const TEMPLATE =
  "{% if tools %}<|im_system|>tool_declare<|im_middle|>{{ tools | tojson }}<|im_end|>{% endif %}" +
  "{% for m in messages %}<|im_user|>{{ m.role }}<|im_middle|>{{ m.content }}<|im_end|>{% endfor %}";

/** The 256 bytes, then "hi": the special tokens start at 257. */
const TIKTOKEN_MODEL = [
  ...Array.from(
    { length: 256 },
    (_, b) => `${btoa(String.fromCharCode(b))} ${b}`,
  ),
  `${btoa("hi")} 256`,
].join("\n") + "\n";

const SPECIALS = [
  "[BOS]",
  "[EOS]",
  "<|im_end|>",
  "<|im_user|>",
  "<|im_system|>",
  "<|im_middle|>",
];

/** A Kimi folder; `files` replaces or (as `null`) removes one. */
async function kimiFolder(
  files: Record<string, string | null> = {},
): Promise<string> {
  const dir = await Deno.makeTempDir();
  const all: Record<string, string | null> = {
    "tiktoken.model": TIKTOKEN_MODEL,
    "tokenization_kimi.py": KIMI_SOURCE,
    "chat_template.jinja": TEMPLATE,
    "tokenizer_config.json": JSON.stringify({
      tokenizer_class: "TikTokenTokenizer",
      auto_map: {
        AutoTokenizer: ["tokenization_kimi.TikTokenTokenizer", null],
      },
      bos_token: "[BOS]",
      added_tokens_decoder: Object.fromEntries(
        SPECIALS.map((
          content,
          i,
        ) => [String(257 + i), { content, special: true }]),
      ),
    }),
    ...files,
  };
  for (const [name, text] of Object.entries(all)) {
    if (text !== null) await Deno.writeTextFile(join(dir, name), text);
  }
  return dir;
}

const engine = () =>
  createEngine({ store() {}, epoch: () => 0, pieces: new Map() });

const TOOL = {
  type: "function",
  function: {
    name: "get_weather",
    parameters: { type: "object", properties: { city: { type: "string" } } },
  },
};

Deno.test("a Kimi folder renders its tool schemas key-sorted, as tokenization_kimi.py's deep_sort_dict does", async () => {
  const dir = await kimiFolder();
  const render = await engine().run({
    op: "render",
    spec: { dir },
    kind: "chat",
    payload: buildTokenizePayload({
      messages: [{ role: "user", content: "hi" }],
      tools: [TOOL],
    }),
  });
  strictEqual(
    render,
    '<|im_system|>tool_declare<|im_middle|>[{"function": {"description": null, "name": "get_weather", "parameters": {"properties": {"city": {"type": "string"}}, "type": "object"}}, "type": "function"}]<|im_end|><|im_user|>user<|im_middle|>hi<|im_end|>',
  );
  await Deno.remove(dir, { recursive: true });
});

Deno.test("a Kimi folder whose tokenization_kimi.py does not sort keeps vLLM's key order", async () => {
  const dir = await kimiFolder({
    "tokenization_kimi.py": KIMI_SOURCE.replace(
      "deep_sort_dict(tools)",
      "tools",
    ),
  });
  const render = await engine().run({
    op: "render",
    spec: { dir },
    kind: "chat",
    payload: buildTokenizePayload({
      messages: [{ role: "user", content: "hi" }],
      tools: [TOOL],
    }),
  }) as string;
  ok(
    render.includes('[{"type": "function", "function": {"name": "get_weather"'),
  );
  await Deno.remove(dir, { recursive: true });
});

Deno.test("a Kimi folder tokenizes with tiktoken.model, its added tokens splitting the text", async () => {
  const dir = await kimiFolder();
  const e = engine();
  const payload = buildTokenizePayload({
    messages: [{ role: "user", content: "hi <|im_end|>" }],
  });
  const ids = await e.run({ op: "tokenize", spec: { dir }, body: payload });
  const [end, user, middle] = [259, 260, 262];
  const bytes = (text: string) => [...new TextEncoder().encode(text)];
  deepStrictEqual(ids, [user, ...bytes("user"), middle, 256, 32, end, end]);
  strictEqual(
    await e.run({ op: "count", spec: { dir }, kind: "chat", payload }),
    10,
  );
  await Deno.remove(dir, { recursive: true });
});

Deno.test("a folder without tokenizer.json is refused in one line naming the file and the vllm backend", async (t) => {
  const refused = async (
    files: Record<string, string | null>,
    message: string,
  ) => {
    const dir = await kimiFolder(files);
    await rejects(
      engine().run({ op: "load", spec: { dir } }),
      (error: unknown) =>
        error instanceof EngineError && error.message === message,
    );
    await Deno.remove(dir, { recursive: true });
  };
  await t.step("remote code the engine does not mirror", () =>
    refused(
      {
        "tokenizer_config.json": JSON.stringify({
          auto_map: { AutoTokenizer: ["tokenization_foo.FooTokenizer", null] },
        }),
      },
      "Cannot count locally: tokenization_foo.py is remote code incontext does not mirror; use the vllm backend",
    ));
  await t.step("Kimi's later releases, which write tools_ts_str", () =>
    refused(
      {
        "tokenization_kimi.py":
          `${KIMI_SOURCE}\n        kwargs['tools_ts_str'] = encode_tools_to_typescript_style(tools)\n`,
      },
      "Cannot count locally: tool_declaration_ts.py (Kimi's tools written as TypeScript) is remote code incontext does not mirror; use the vllm backend",
    ));
  await t.step("another split pattern", () =>
    refused(
      {
        "tokenization_kimi.py": KIMI_SOURCE.replace(
          String.raw`\p{N}{1,3}`,
          String.raw`\p{N}`,
        ),
      },
      "Cannot count locally: tokenization_kimi.py splits text otherwise than the Kimi K2 release incontext mirrors; use the vllm backend",
    ));
  await t.step("no tiktoken.model", () =>
    refused(
      { "tiktoken.model": null },
      "Cannot count locally: tiktoken.model, which the folder's tokenizer class reads, is not in the model folder",
    ));
  await t.step("no tokenizer class at all", () =>
    refused(
      { "tokenizer_config.json": "{}" },
      "Cannot count locally: the model folder has no tokenizer.json, nor a tokenizer class incontext mirrors; use the vllm backend",
    ));
});

Deno.test("kimiSplit() cuts as tokenization_kimi.py's split, with Python's isspace", async () => {
  // \x1c is a space to Python's isspace and not to Unicode's White_Space;
  // U+FEFF is neither.
  const text = "a".repeat(30_000) + "\x1c".repeat(26_000) +
    "\ufeff".repeat(25_001) +
    " \u0085".repeat(3) + "\u{1f600}".repeat(25_002);
  const python = String.raw`
import json, sys
s = sys.stdin.read()
def split(s, n):
    length, space, start = 0, s[0].isspace() if s else False, 0
    for i in range(len(s)):
        now = s[i].isspace()
        if space ^ now:
            length, space = 1, now
        else:
            length += 1
            if length > n:
                yield s[start:i]
                start, length = i, 1
    yield s[start:]
json.dump([len(p) for p in split(s, 25000)], sys.stdout)
`;
  const child = new Deno.Command("/usr/bin/python3", {
    args: ["-c", python],
    stdin: "piped",
    stdout: "piped",
  }).spawn();
  const writer = child.stdin.getWriter();
  await writer.write(new TextEncoder().encode(text));
  await writer.close();
  const lengths = JSON.parse(
    new TextDecoder().decode((await child.output()).stdout),
  );
  deepStrictEqual(kimiSplit(text).map((part) => [...part].length), lengths);
  strictEqual(kimiSplit(text).join(""), text);
});

Deno.test("deepSortDict() orders keys by code point, integer-like keys too", () => {
  const sorted = deepSortDict({
    b: [{ "\u{1f600}": 1, "\uff01": 2 }],
    "10": 0,
    "2": 0,
    a: null,
  });
  const keys = (value: unknown) => [...(value as Map<string, unknown>).keys()];
  deepStrictEqual(keys(sorted), ["10", "2", "a", "b"]);
  const list = (sorted as Map<string, unknown>).get("b") as unknown[];
  deepStrictEqual(keys(list[0]), ["\uff01", "\u{1f600}"]);
  strictEqual(deepSortDict(null), null);
});
