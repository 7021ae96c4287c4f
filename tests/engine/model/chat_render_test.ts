// Covers: packages/engine/src/model/chat_render.ts, packages/engine/src/model/template_files.ts
// Which chat template renders a request: vLLM's resolve_chat_template over
// transformers' template files, through LocalBackend on a byte-level
// tokenizer (one token per byte, so tokenize + detokenize gives the render).
import { rejects, strictEqual } from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { join } from "node:path";
import { LocalBackend } from "../../../src/backends/local/mod.ts";
import { CountError } from "../../../src/core/errors.ts";

const BYTE_LEVEL = fileURLToPath(
  new URL("../../fixtures/byte_level/", import.meta.url),
);
const TOOLS = [{ type: "function", function: { name: "f" } }];

/** A model folder of the byte-level tokenizer and `files`, removed on disposal. */
async function folder(
  files: Record<string, string>,
): Promise<{ dir: string } & AsyncDisposable> {
  const dir = await Deno.makeTempDir();
  await Deno.copyFile(
    join(BYTE_LEVEL, "tokenizer.json"),
    join(dir, "tokenizer.json"),
  );
  for (const [name, text] of Object.entries(files)) {
    await Deno.mkdir(join(dir, name, ".."), { recursive: true });
    await Deno.writeTextFile(join(dir, name), text);
  }
  return {
    dir,
    [Symbol.asyncDispose]: () => Deno.remove(dir, { recursive: true }),
  };
}

async function render(
  options: { dir: string; chatTemplate?: string },
  body: Record<string, unknown> = {},
): Promise<string> {
  await using backend = new LocalBackend({ ...options, cache: null });
  const ids = await backend.tokenize({
    messages: [{ role: "user", content: "Hi" }],
    ...body,
  });
  return await backend.detokenize(ids);
}

Deno.test("LocalBackend picks additional_chat_templates/ as transformers names them", async (t) => {
  await using model = await folder({
    "chat_template.jinja": "default",
    "additional_chat_templates/tool_use.jinja": "tool_use",
    "additional_chat_templates/rag.jinja": "rag",
    "tokenizer_config.json": JSON.stringify({ chat_template: "config" }),
  });
  await t.step("tool_use with tools, default without", async () => {
    strictEqual(await render(model, { tools: TOOLS }), "tool_use");
    strictEqual(await render(model), "default");
  });
  await t.step("a request's template may name one", async () => {
    strictEqual(await render(model, { chat_template: "rag" }), "rag");
    strictEqual(
      await render(model, { chat_template: "own {{ 1 }}" }),
      "own 1",
    );
  });
});

Deno.test("LocalBackend refuses named templates with no default for a request without tools", async () => {
  await using model = await folder({
    "additional_chat_templates/tool_use.jinja": "tool_use",
  });
  strictEqual(await render(model, { tools: TOOLS }), "tool_use");
  await rejects(render(model), CountError);
});

Deno.test("LocalBackend renders a multimodal folder's chat_template.json for requests without tools, as vLLM does", async (t) => {
  const files = {
    "chat_template.json": JSON.stringify({ chat_template: "processor" }),
    "tokenizer_config.json": JSON.stringify({ chat_template: "tokenizer" }),
  };
  await t.step("with a preprocessor_config.json", async () => {
    await using model = await folder({
      ...files,
      "preprocessor_config.json": "{}",
    });
    strictEqual(await render(model), "processor");
    strictEqual(await render(model, { tools: TOOLS }), "tokenizer");
    strictEqual(
      await render({ ...model, chatTemplate: "explicit{{ '' }}" }),
      "explicit",
    );
  });
  await t.step("not without a processor", async () => {
    await using model = await folder(files);
    strictEqual(await render(model), "tokenizer");
  });
});

Deno.test("LocalBackend reads its chatTemplate as vLLM's load_chat_template does", async (t) => {
  await using model = await folder({ "chat_template.jinja": "folder" });
  await t.step("a file is read, whatever its name holds", async () => {
    const path = join(model.dir, "{x}.jinja");
    await Deno.writeTextFile(path, "from file");
    strictEqual(await render({ ...model, chatTemplate: path }), "from file");
  });
  await t.step("text with a brace or a newline is the template", async () => {
    strictEqual(
      await render({ ...model, chatTemplate: "Hi\nthere" }),
      "Hi\nthere",
    );
    strictEqual(await render({ ...model, chatTemplate: "{{ 2 }}" }), "2");
  });
  await t.step("anything else must be a readable file", async () => {
    await rejects(
      render({ ...model, chatTemplate: join(model.dir, "missing") }),
      CountError,
    );
  });
});
