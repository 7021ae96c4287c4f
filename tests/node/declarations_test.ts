import { deepStrictEqual, throws } from "node:assert/strict";
import { checkDeclarations } from "./_declarations.ts";
import { StepError } from "./_run.ts";

const ROOT = "file:///work/pkg/";
const encode = (text: string) => new TextEncoder().encode(text);
const NOTE = (file: string) =>
  `Could not generate types for '${ROOT}${file}'. Types will not be included for this module.`;

Deno.test("checkDeclarations() accepts untyped modules no declaration imports", () => {
  const files = new Map([
    ["mod.js", encode('import { f } from "./helper.js";')],
    [
      "mod.d.ts",
      encode(
        'import type { T } from "./types.js";\nexport declare function g(): T;',
      ),
    ],
    ["types.d.ts", encode("export interface T {}")],
    ["helper.js", encode("export const f = 1;")],
  ]);
  deepStrictEqual(
    checkDeclarations(
      `\x1b[32mCheck\x1b[0m mod.ts\n${NOTE("helper.ts")}\n`,
      files,
      ROOT,
    ),
    { untyped: ["helper.ts"], declarations: 2 },
  );
});

Deno.test("checkDeclarations() fails on a declaration that imports an untyped module, and on any other warning", () => {
  const files = new Map([
    ["mod.d.ts", encode('export type { H } from "./helper.js";')],
  ]);
  throws(
    () => checkDeclarations(NOTE("helper.ts"), files, ROOT),
    (error) =>
      error instanceof StepError &&
      error.message === "mod.d.ts imports ./helper.js, which has no .d.ts",
  );
  throws(
    () => checkDeclarations("Failed to emit .d.ts for 'x'", new Map(), ROOT),
    StepError,
  );
});
