// Covers: packages/engine/src/tokenizer/grok2.ts, packages/engine/src/tokenizer/tiktoken_tokenizer.ts, packages/engine/src/tokenizer/files.ts, packages/engine/src/vllm/tokenizer_mode.ts, packages/engine/src/model/chat_render.ts
// A Grok 2 folder (tokenizer.tok.json, vLLM's tokenizer mode grok2) counts
// prompts locally as vLLM's Grok2Tokenizer encodes them: tiktoken's merge
// over the file's ranks, vLLM's split pattern (or the file's pat_str), only
// the allowed specials recognised. The vocabulary is the tests' own, trained
// and checked by a Python stdlib reference (_tiktoken_reference.ts), the
// text split by Python's re. Chats, which vLLM fails in this mode, and files
// vLLM does not load are refused in one line.
import { deepStrictEqual, ok, rejects, strictEqual } from "node:assert/strict";
import { join } from "node:path";
import { LocalBackend } from "../../../src/backends/local/mod.ts";
import { CountError } from "../../../src/core/errors.ts";
import { createCountCache } from "../../../src/cache/mod.ts";
import { EngineError } from "../../../packages/engine/src/common/errors.ts";
import { createEngine } from "../../../packages/engine/src/model/operations.ts";
import { pythonReference } from "./_tiktoken_reference.ts";

const CORPUS =
  "the cat sat on the mat and the hat that the rat ate; it's the cat's hat, 1234 5678 -- done.\n\nthe end " +
  "hello world, the world's words were written with care and the writer wrote more words than the reader read; " +
  "separators separate the parts of a text into the smaller parts that matter";

/** The specials after the ranks: which ones vLLM's encode allows. */
const SPECIALS: readonly [string, boolean][] = [
  ["<|pad|>", true],
  ["<|separator|>", true],
  ["<|eos|>", true],
  ["<|control3|>", true],
  ["<|reserved_5|>", true],
  ["<|listed|>", true], // in the file's default_allowed_special
  ["<|unused|>", false],
  ["<|reserved_200|>", false],
];

const TEXT =
  "Hello the world's cat<|separator|>\n\nthe mat<|unused|> sat 1234;  \n the <|listed|>hat<|reserved_200|>rat<|control3|><|eos|>  it'S!!\r\n \t";

/** vLLM's PAT_STR_B over ASCII, in Python's re, for the reference split. */
const PYTHON_SPLIT = String.raw`
import json, re, sys
job = json.load(sys.stdin)
pat = re.compile(r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\nA-Za-z0-9]?[A-Za-z]+|[0-9]| ?[^\sA-Za-z0-9]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""")
special = re.compile("|".join(re.escape(s) for s in job["allowed"]))
out, start = [], 0
for m in list(special.finditer(job["text"])) + [None]:
    end = m.start() if m else len(job["text"])
    out += [list(p.encode()) for p in pat.findall(job["text"][start:end])]
    if m:
        out.append(m.group())
        start = m.end()
json.dump(out, sys.stdout)
`;

async function python(program: string, input: unknown): Promise<unknown> {
  const child = new Deno.Command("/usr/bin/python3", {
    args: ["-c", program],
    stdin: "piped",
    stdout: "piped",
  }).spawn();
  const writer = child.stdin.getWriter();
  await writer.write(new TextEncoder().encode(JSON.stringify(input)));
  await writer.close();
  const output = await child.output();
  if (!output.success) throw new Error("the Python reference failed");
  return JSON.parse(new TextDecoder().decode(output.stdout));
}

const bytesOf = (text: string) => [...new TextEncoder().encode(text)];

/** The tests' vocabulary and TEXT's ids by the references. */
async function reference(): Promise<
  { file: Record<string, unknown>; ids: number[] }
> {
  const allowed = SPECIALS.filter(([, yes]) => yes).map(([s]) => s);
  const split = await python(PYTHON_SPLIT, { text: TEXT, allowed }) as (
    | number[]
    | string
  )[];
  const pieces = split.filter((p): p is number[] => typeof p !== "string");
  const { model, ids } = await pythonReference(CORPUS, 160, pieces);
  const regular = model.trim().split("\n").map((line) => {
    const [token, rank] = line.split(" ");
    return {
      bytes: [...atob(token!)].map((c) => c.charCodeAt(0)),
      token: +rank!,
    };
  });
  const specialIds = new Map(SPECIALS.map(([s], i) => [s, regular.length + i]));
  let next = 0;
  return {
    file: {
      word_split: "V1",
      vocab_size: regular.length + SPECIALS.length,
      regular_tokens: regular,
      special_tokens: SPECIALS.map(([s]) => ({
        bytes: bytesOf(s),
        token: specialIds.get(s),
      })),
      default_allowed_special: [bytesOf("<|listed|>")],
    },
    ids: split.flatMap((p) =>
      typeof p === "string" ? [specialIds.get(p)!] : ids[next++]!
    ),
  };
}

const REFERENCE = await reference();

/** A Grok 2 folder; `files` replaces or (as `null`) removes one. */
async function grokFolder(
  files: Record<string, string | null> = {},
): Promise<string> {
  const dir = await Deno.makeTempDir();
  const all: Record<string, string | null> = {
    "tokenizer.tok.json": JSON.stringify(REFERENCE.file),
    "config.json": JSON.stringify({ architectures: ["Grok1ForCausalLM"] }),
    ...files,
  };
  for (const [name, text] of Object.entries(all)) {
    if (text !== null) await Deno.writeTextFile(join(dir, name), text);
  }
  return dir;
}

const engine = () =>
  createEngine({ store() {}, epoch: () => 0, pieces: new Map() });

const C = { contextLength: 1 << 20 };

const GROK2_CHAT =
  "Cannot count a chat request in vLLM's tokenizer mode grok2: vLLM's Grok2Tokenizer renders chats with transformers' chat_template_utils.apply_chat_template, which transformers does not have, so vLLM fails every chat request";

Deno.test("a Grok 2 folder tokenizes a prompt as tiktoken over tokenizer.tok.json, only the allowed specials split", async () => {
  const dir = await grokFolder();
  try {
    const e = engine();
    const spec = { dir, tokenizerMode: "grok2" };
    ok((REFERENCE.file.regular_tokens as unknown[]).length > 256 + 80);
    for (const add of [true, false]) {
      deepStrictEqual(
        await e.run({
          op: "tokenize",
          spec,
          body: { prompt: TEXT, add_special_tokens: add },
        }),
        REFERENCE.ids,
      );
    }
    strictEqual(
      await e.run({
        op: "count",
        spec,
        kind: "completion",
        payload: { prompt: TEXT },
      }),
      REFERENCE.ids.length,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("LocalBackend() picks grok2 for Grok1ForCausalLM and counts its completions, on the calling thread and in the worker", async () => {
  await using cache = createCountCache();
  const dir = await grokFolder();
  try {
    for (const where of [null, cache]) {
      await using backend = new LocalBackend({ dir, cache: where });
      strictEqual(
        await backend.count({ prompt: TEXT }, { ...C, kind: "completion" }),
        REFERENCE.ids.length,
      );
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a Grok 2 folder's chat requests are refused in one line, as vLLM fails them", async () => {
  await using cache = createCountCache();
  const dir = await grokFolder();
  try {
    const messages = [{ role: "user", content: "hi" }];
    for (const where of [null, cache]) {
      await using backend = new LocalBackend({ dir, cache: where });
      await rejects(backend.count({ messages }, C), (error: unknown) => {
        ok(error instanceof CountError);
        ok(error.message.endsWith(GROK2_CHAT));
        return true;
      });
    }
    await rejects(
      engine().run({
        op: "tokenize",
        spec: { dir, tokenizerMode: "grok2" },
        body: { messages },
      }),
      (error: unknown) =>
        error instanceof EngineError && error.message === GROK2_CHAT,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a Grok 2 folder's token strings are UTF-8 text and its ids decode to the prompt", async () => {
  const dir = await grokFolder();
  try {
    const e = engine();
    const spec = { dir, tokenizerMode: "grok2" };
    const text = "é<|separator|>";
    const ids = await e.run({
      op: "tokenize",
      spec,
      body: { prompt: text },
    }) as number[];
    // é is two bytes the vocabulary does not merge.
    strictEqual(ids.length, 3);
    deepStrictEqual(
      await e.run({ op: "decode", spec, ids, form: "strings" }),
      ["\ufffd", "\ufffd", "<|separator|>"],
    );
    strictEqual(await e.run({ op: "decode", spec, ids, form: "text" }), text);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a Grok 2 folder splits with the pat_str tokenizer.tok.json gives", async () => {
  const dir = await grokFolder({
    "tokenizer.tok.json": JSON.stringify({
      ...REFERENCE.file,
      pat_str: String.raw`\p{N}{1,3}|\p{L}+|\s+|[^\s\p{L}\p{N}]+`,
    }),
  });
  try {
    const e = engine();
    const spec = { dir, tokenizerMode: "grok2" };
    const tokenize = (prompt: string) =>
      e.run({ op: "tokenize", spec, body: { prompt } }) as Promise<number[]>;
    // vLLM's pattern cuts each digit apart; this one three at a time.
    const joined = await tokenize("1234");
    strictEqual(joined.length, 2);
    deepStrictEqual(
      joined,
      [...await tokenize("123"), ...await tokenize("4")],
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a Grok 2 folder vLLM does not load is refused in one line naming tokenizer.tok.json", async (t) => {
  const refused = async (
    files: Record<string, string | null>,
    message: string,
  ) => {
    const dir = await grokFolder(files);
    try {
      await rejects(
        engine().run({ op: "load", spec: { dir, tokenizerMode: "auto" } }),
        (error: unknown) =>
          error instanceof EngineError && error.message === message,
      );
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  };
  const file = (change: Record<string, unknown>) => ({
    "tokenizer.tok.json": JSON.stringify({ ...REFERENCE.file, ...change }),
  });
  const unloaded = (why: string) =>
    `Cannot count locally: tokenizer.tok.json is not a Grok 2 vocabulary vLLM loads (${why})`;
  await t.step(
    "no tokenizer.tok.json, even beside a tokenizer.json",
    () =>
      refused(
        {
          "tokenizer.tok.json": null,
          "tokenizer.json": "{}",
          "tokenizer_config.json": "{}",
        },
        "Cannot count locally: tokenizer.tok.json, which vLLM's tokenizer mode grok2 reads, is not in the model folder",
      ),
  );
  await t.step(
    "another word_split",
    () =>
      refused(file({ word_split: "V2" }), unloaded("its word_split is not V1")),
  );
  await t.step("a vocab_size tiktoken's check fails", () =>
    refused(
      file({ vocab_size: SPECIALS.length }),
      unloaded("its vocab_size does not match its tokens"),
    ));
  await t.step("two tokens of one rank", () =>
    refused(
      file({
        regular_tokens: [{ bytes: [97], token: 0 }, { bytes: [98], token: 0 }],
        vocab_size: 0,
      }),
      unloaded("two regular tokens share a rank"),
    ));
  await t.step("a token that is not bytes", () =>
    refused(
      file({ special_tokens: [{ bytes: [256], token: 1 }] }),
      unloaded("a token is not a list of bytes with an id"),
    ));
  await t.step(
    "not JSON",
    () => refused({ "tokenizer.tok.json": "{" }, unloaded("it is not JSON")),
  );
  await t.step("a pat_str the engine does not translate", () =>
    refused(
      file({ pat_str: String.raw`(?<=a)b` }),
      "Cannot count locally: tokenizer.tok.json's pat_str uses a construct incontext does not translate; use the vllm backend",
    ));
});

Deno.test("a Grok 2 folder's expectedSha256 pins tokenizer.tok.json", async () => {
  const text = JSON.stringify(REFERENCE.file);
  const dir = await grokFolder({ "tokenizer.tok.json": text });
  try {
    const digest = await crypto.subtle.digest(
      "SHA-256",
      new TextEncoder().encode(text),
    );
    const sha = [...new Uint8Array(digest)]
      .map((b) => b.toString(16).padStart(2, "0")).join("");
    const e = engine();
    const load = (expectedSha256: string) =>
      e.run({
        op: "load",
        spec: { dir, tokenizerMode: "grok2", expectedSha256 },
      });
    await load(sha);
    await rejects(load("0".repeat(64)), EngineError);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
