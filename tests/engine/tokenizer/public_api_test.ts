// Covers: packages/engine/src/tokenizer/tokenizer.ts, packages/engine/src/tokenizer/library_tokenizer.ts, packages/engine/src/tokenizer/patterns.ts
/**
 * The tokenizer modules use `@huggingface/tokenizers` through its public
 * API alone: no cast of its objects to reach what their types hide, no
 * prototype access, no private member, no write to a member of its
 * classes, no import of its files past the package's entry. The scanner
 * (tests/_kit/private_use.ts, the same one that holds the chat-template
 * modules to @huggingface/jinja) reads the library's names from the
 * typings it publishes, and is shown to find each of these.
 *
 * @module
 */
import { deepStrictEqual, ok } from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { join } from "node:path";
import {
  type LibrarySurface,
  npmPackageDir,
  privateUses,
  privateUsesIn,
  readModules,
  typingsSurface,
} from "../../_kit/private_use.ts";

const LIBRARY = "@huggingface/tokenizers";
const FOLDER = "packages/engine/src/tokenizer";
const ROOT = fileURLToPath(new URL("../../../", import.meta.url));

/** The library as the engine pins it, read from its shipped typings. */
async function surface(): Promise<LibrarySurface> {
  const config = JSON.parse(
    await Deno.readTextFile(join(ROOT, "packages/engine/deno.json")),
  ) as { imports: Record<string, string> };
  const version = /@([^@/]+)$/.exec(config.imports[LIBRARY]!)![1]!;
  const dir = await npmPackageDir(LIBRARY, version);
  return { specifier: LIBRARY, ...await typingsSurface(join(dir, "types")) };
}

Deno.test("the tokenizer modules use @huggingface/tokenizers' public API alone", async () => {
  const library = await surface();
  // What the typings say was read: the entry's re-exports followed, the
  // private members and the class members found.
  ok(library.exports.includes("Tokenizer"));
  ok(library.exports.includes("SplitPreTokenizer"), "export * not followed");
  ok(library.privateMembers!.includes("added_tokens_map"));
  ok(library.classMembers!.includes("cache"));
  const files = await readModules(ROOT, FOLDER);
  ok(
    [...files.values()].some((source) => source.includes(`"${LIBRARY}"`)),
    "no module imports the library: the scan would prove nothing",
  );
  deepStrictEqual(await privateUsesIn(ROOT, FOLDER, library), []);
});

Deno.test("privateUses() finds each way past @huggingface/tokenizers' public API", async (t) => {
  const library = await surface();
  const findings = (...lines: string[]) =>
    privateUses(new Map([["m.ts", lines.join("\n")]]), library);
  await t.step("a cast through unknown or any", () => {
    deepStrictEqual(
      findings(
        "const t = tokenizer as unknown as { model: unknown };",
        "function f(x: any) {}",
        "const y = <any> x;",
      ),
      [
        "m.ts:1: casts through unknown",
        "m.ts:2: casts through any",
        "m.ts:3: casts through any",
      ],
    );
  });
  await t.step("a cast to one of the library's types", () => {
    deepStrictEqual(findings("const bpe = tokenizer.model as BPE;"), [
      "m.ts:1: casts to the library's type BPE",
    ]);
  });
  await t.step("the prototype, and a property defined in place", () => {
    deepStrictEqual(
      findings(
        "BPE.prototype.encode;",
        "Object.defineProperty(model, 'cache', {});",
      ),
      [
        "m.ts:1: reads the prototype chain",
        "m.ts:2: calls defineProperty (a patch in place)",
      ],
    );
  });
  await t.step("a private member by property or by bracket", () => {
    deepStrictEqual(
      findings(
        'const map = tokenizer["added_tokens_map"];',
        "tokenizer?.tokenize_helper(text, {});",
      ),
      [
        "m.ts:1: names the private member added_tokens_map in a string",
        "m.ts:2: uses the private member tokenize_helper",
      ],
    );
  });
  await t.step("a write to a member of its classes", () => {
    deepStrictEqual(
      findings("pre.pattern = /x/g;", 'model["cache"] = new Map();'),
      [
        "m.ts:1: writes the library's member pattern (a patch in place)",
        "m.ts:2: writes the library's member cache (a patch in place)",
      ],
    );
  });
  await t.step("an import of one of its files", () => {
    deepStrictEqual(
      findings(
        'import x from "npm:@huggingface/tokenizers@0.2.0/dist/tokenizers.mjs";',
      ),
      [
        "m.ts:1: imports default, which the library does not export",
        "m.ts:1: imports npm:@huggingface/tokenizers@0.2.0/dist/tokenizers.mjs, a file of the library, not its entry",
      ],
    );
  });
  await t.step("the code of a JSDoc example, on its line", () => {
    deepStrictEqual(
      findings(
        "/**",
        " * Reads nothing of `added_tokens_map`, as unknown as it is.",
        " * ```ts",
        " * const t = library as unknown as { x: 1 };",
        " * ```",
        " */",
        "export const x = 1;",
      ),
      ["m.ts:4: casts through unknown"],
    );
  });
  await t.step(
    "nothing in public reads, own members, comments or strings",
    () => {
      deepStrictEqual(
        findings(
          "// model.cache = x in a comment",
          'import { SplitPreTokenizer, Tokenizer } from "@huggingface/tokenizers";',
          "const ids = new Tokenizer(json, {}).encode(text).ids;",
          "const regex = new SplitPreTokenizer(config).pattern;",
          `const message = "tokenizer.json's unk_token = none";`,
          "if (a.length === b.length) count += 1;",
          "class Own {",
          "  cache = new Map();",
          "  reset() {",
          "    this.cache = new Map();",
          "  }",
          "}",
          "const spread = [...tokenizer.get_added_tokens_decoder().values()];",
          "const shape = { Sequence: { id: 'A' } };",
          "const ok = (x: number) => x >= 1;",
        ),
        [],
      );
    },
  );
});
