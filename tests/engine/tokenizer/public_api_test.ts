// Covers: packages/engine/src/tokenizer/tokenizer.ts, packages/engine/src/tokenizer/library_tokenizer.ts, packages/engine/src/tokenizer/patterns.ts
/**
 * The tokenizer modules use `@huggingface/tokenizers` through its public
 * API alone: no cast of its objects to reach what their types hide, no
 * prototype access, no private member, no write to a member of its
 * classes, no import of its files past the package's entry. The scanner
 * (tests/_kit/library_internals.ts) reads the library's names from the
 * declaration files it publishes, and is shown to find each of these.
 *
 * @module
 */
import { deepStrictEqual } from "node:assert/strict";
import { join } from "node:path";
import {
  internalsUsed,
  type LibraryDeclarations,
  npmDeclarations,
  readDeclarations,
} from "../../_kit/library_internals.ts";

const PACKAGE = "@huggingface/tokenizers";
const FOLDER = "packages/engine/src/tokenizer";
const ROOT = new URL("../../../", import.meta.url).pathname;

/** The library as the engine pins it. */
async function library(): Promise<LibraryDeclarations> {
  const config = JSON.parse(
    await Deno.readTextFile(join(ROOT, "packages/engine/deno.json")),
  );
  const version = /@([^@/]+)$/.exec(config.imports[PACKAGE])![1]!;
  return readDeclarations(PACKAGE, await npmDeclarations(PACKAGE, version));
}

Deno.test("the tokenizer modules use @huggingface/tokenizers' public API alone", async () => {
  const declarations = await library();
  const found = [];
  for await (const entry of Deno.readDir(join(ROOT, FOLDER))) {
    if (!entry.name.endsWith(".ts")) continue;
    const path = `${FOLDER}/${entry.name}`;
    found.push(
      ...internalsUsed(
        path,
        await Deno.readTextFile(join(ROOT, path)),
        declarations,
      ),
    );
  }
  deepStrictEqual(found, []);
});

Deno.test("internalsUsed() finds each way past a library's public API", async () => {
  const declarations = await library();
  const rules = (code: string) =>
    internalsUsed("m.ts", code, declarations).map((use) => use.rule);
  deepStrictEqual(
    rules(`const t = tokenizer as unknown as { model: unknown };`),
    ["a cast through unknown or any"],
  );
  deepStrictEqual(rules(`function f(x: any) {}`), [
    "a cast through unknown or any",
  ]);
  deepStrictEqual(
    rules(`const bpe = tokenizer.model as BPE;`),
    ["a cast to the library's type"],
  );
  deepStrictEqual(
    rules(`Object.getPrototypeOf(model).bpe = f;`),
    ["prototype access", "a write to the library's member"],
  );
  deepStrictEqual(rules(`BPE.prototype.encode;`), ["prototype access"]);
  deepStrictEqual(
    rules(`const map = tokenizer["added_tokens_map"];`),
    ["a private member"],
  );
  deepStrictEqual(
    rules(`tokenizer?.tokenize_helper(text, {});`),
    ["a private member"],
  );
  deepStrictEqual(
    rules(`pre.pattern = /x/g;`),
    ["a write to the library's member"],
  );
  deepStrictEqual(
    rules(`model["cache"] = new Map();`),
    ["a write to the library's member"],
  );
  deepStrictEqual(
    rules(
      `import x from "npm:@huggingface/tokenizers@0.2.0/dist/tokenizers.mjs";`,
    ),
    ["an import of the package's own files"],
  );
  deepStrictEqual(
    rules([
      "/**",
      " * Reads nothing of `added_tokens_map`, as unknown as it is.",
      " * ```ts",
      " * const t = library as unknown as { x: 1 };",
      " * ```",
      " */",
      "// model.cache = x in a comment",
      `import { Tokenizer } from "@huggingface/tokenizers";`,
      `const ids = new Tokenizer(json, {}).encode(text).ids;`,
      `const regex = new SplitPreTokenizer(config).pattern;`,
      `const message = "tokenizer.json's unk_token = none";`,
      `if (a.length === b.length) count += 1;`,
    ].join("\n")),
    ["a cast through unknown or any"],
    "only the example's code counts, and public reads pass",
  );
});
