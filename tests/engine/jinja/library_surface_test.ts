// Covers: packages/engine/src/jinja/parse.ts, packages/engine/src/jinja/interpreter.ts
// The chat-template modules use @huggingface/jinja only through what it
// publishes (its entry's exports: `parse()` and `tokenize()` here), so
// that its next release cannot change a count through a private method,
// a prototype patch or a class it does not export. The scanner
// (tests/_kit/private_use.ts) reads the library's private members and
// unexported classes from its shipped typings, and is shown to report each
// way past the public API on code written that way.
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

const ROOT = fileURLToPath(new URL("../../../", import.meta.url));
const FOLDER = "packages/engine/src/jinja";
const LIBRARY = "@huggingface/jinja";
/** What the library's entry exports (its index.d.ts). */
const PUBLIC = ["Environment", "Interpreter", "Template", "parse", "tokenize"];

/** The library's version, as the engine pins it. */
async function pinnedVersion(): Promise<string> {
  const manifest = JSON.parse(
    await Deno.readTextFile(join(ROOT, "packages/engine/deno.json")),
  ) as { imports: Record<string, string> };
  return manifest.imports[LIBRARY]!.match(/@([^@/]+)$/)![1]!;
}

/** The surface of the pinned release, read from its shipped typings. */
async function surface(): Promise<LibrarySurface & { typed: string[] }> {
  const dir = await npmPackageDir(LIBRARY, await pinnedVersion());
  const typings = await typingsSurface(join(dir, "dist"));
  return {
    specifier: LIBRARY,
    exports: PUBLIC,
    privateMembers: typings.privateMembers,
    unexported: typings.unexported,
    types: typings.types,
    classMembers: typings.classMembers,
    typed: typings.exports,
  };
}

Deno.test("the chat-template modules use @huggingface/jinja's public API only", async () => {
  const library = await surface();
  // The entry exports what the test allows, and nothing was lost reading
  // the typings.
  deepStrictEqual(library.typed, [...PUBLIC].sort());
  ok(library.privateMembers!.includes("evaluateFor"));
  ok(library.unexported!.includes("KeywordArgumentsValue"));
  const files = await readModules(ROOT, FOLDER);
  ok(files.size > 20, `only ${files.size} modules read`);
  ok(
    [...files.values()].some((source) => source.includes(`"${LIBRARY}"`)),
    "no module imports the library: the scan would prove nothing",
  );
  deepStrictEqual(await privateUsesIn(ROOT, FOLDER, library), []);
});

/** The library as its typings describe it, for the synthetic modules below. */
const SYNTHETIC: LibrarySurface = {
  specifier: LIBRARY,
  exports: PUBLIC,
  privateMembers: ["evaluateFor", "applyFilter", "evaluateIdentifier"],
  unexported: ["KeywordArgumentsValue", "CallExpression", "StringValue"],
};

function findings(source: string): string[] {
  return privateUses(new Map([["m.ts", source]]), SYNTHETIC);
}

Deno.test("privateUses() reports each way past a library's public API", async (t) => {
  await t.step("a cast through unknown, to reach what the typings hide", () => {
    deepStrictEqual(
      findings(
        'import { Interpreter } from "@huggingface/jinja";\nconst Base = Interpreter as unknown as new () => object;\n',
      ),
      ["m.ts:2: casts through unknown"],
    );
  });
  await t.step("a subclass overriding a private method", () => {
    deepStrictEqual(
      findings(
        'import { Interpreter } from "@huggingface/jinja";\nclass Mine extends Interpreter {\n  override evaluateIdentifier() {}\n}\n',
      ),
      [
        "m.ts:2: subclasses the library's Interpreter (to override its methods)",
        "m.ts:3: overrides the private member evaluateIdentifier",
      ],
    );
  });
  await t.step("a subclass of a value made from the library's class", () => {
    deepStrictEqual(
      findings(
        'import { Interpreter } from "@huggingface/jinja";\nconst Base = Interpreter;\nclass Mine extends Base {}\n',
      ),
      ["m.ts:3: subclasses the library's Base (to override its methods)"],
    );
  });
  await t.step("a method patched onto the prototype", () => {
    deepStrictEqual(
      findings("(Mine.prototype as never as Patch).evaluateFor = f;\n"),
      [
        "m.ts:1: reads the prototype chain",
        "m.ts:1: uses the private member evaluateFor",
      ],
    );
  });
  await t.step("a class fetched from an instance or a prototype", () => {
    deepStrictEqual(
      findings(
        "const Kw = args.at(-1)!.constructor;\nconst Base = Object.getPrototypeOf(x);\n",
      ),
      [
        "m.ts:1: reads an object's constructor (a class that is not exported)",
        "m.ts:2: calls getPrototypeOf",
      ],
    );
  });
  await t.step(
    "a private member by property, by bracket, by reflection",
    () => {
      deepStrictEqual(
        findings(
          'self.applyFilter(v);\nself?.applyFilter(v);\nself["evaluateFor"](n);\nReflect.get(self, key);\n',
        ),
        [
          "m.ts:1: uses the private member applyFilter",
          "m.ts:2: uses the private member applyFilter",
          "m.ts:3: names the private member evaluateFor in a string",
          "m.ts:4: uses Reflect",
        ],
      );
    },
  );
  await t.step(
    "an unexported name imported, or read from a file of the library",
    () => {
      deepStrictEqual(
        findings(
          'import { Environment, StringValue } from "@huggingface/jinja";\nimport { CallExpression } from "npm:@huggingface/jinja@0.5.11/dist/ast.js";\n',
        ),
        [
          "m.ts:1: imports StringValue, which the library does not export",
          "m.ts:1: names StringValue, which the library does not export",
          "m.ts:2: imports CallExpression, which the library does not export",
          "m.ts:2: imports npm:@huggingface/jinja@0.5.11/dist/ast.js, a file of the library, not its entry",
          "m.ts:2: names CallExpression, which the library does not export",
        ],
      );
    },
  );
  await t.step("an unexported class named in code", () => {
    deepStrictEqual(
      findings("if (value instanceof KeywordArgumentsValue) {}\n"),
      ["m.ts:1: names KeywordArgumentsValue, which the library does not export"],
    );
  });
  await t.step(
    "nothing in the public API, comments, strings or own names",
    () => {
      deepStrictEqual(
        findings(
          [
            'import { parse, tokenize } from "@huggingface/jinja";',
            'import type { CallExpression } from "./ast.ts";',
            "// Interpreter.prototype.evaluateFor is the library's: not used",
            '/* x as unknown as y */ const kind = "CallExpression";',
            "const text = `as unknown as ${kind}.constructor`;",
            "const re = /\\.prototype|'/g;",
            "type StringValue = { value: string };",
            'const tree = parse(tokenize("{{ x }}"));',
            "const call: CallExpression | undefined = undefined;",
            "class Fields extends Map<string, string> {}",
            "",
          ].join("\n"),
        ),
        [],
      );
    },
  );
});
