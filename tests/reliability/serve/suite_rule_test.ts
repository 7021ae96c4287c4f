/**
 * The rule of this folder: every step of every test here ends by asserting
 * that the process it drives is still alive and serves a normal request
 * (`stillServes`, `stillTokenizes`, `stillAnswers` in `_process.ts`).
 */
import { ok, strictEqual } from "node:assert/strict";

const HERE = new URL("./", import.meta.url);

Deno.test("every step of the serve suite ends by checking that its process still serves", async () => {
  let files = 0;
  for await (const entry of Deno.readDir(HERE)) {
    if (
      !entry.name.endsWith("_test.ts") || entry.name === "suite_rule_test.ts"
    ) {
      continue;
    }
    files++;
    const source = await Deno.readTextFile(new URL(entry.name, HERE));
    const steps = source.match(/await t\.step\(/g)?.length ?? 0;
    // A check that is the last statement of the block it stands in.
    const closing = source.match(
      /await (?:stillServes|stillTokenizes|stillAnswers)\(\w+\);\n\s*\}/g,
    )?.length ?? 0;
    ok(steps > 0, `${entry.name} has no steps`);
    strictEqual(
      closing,
      steps,
      `${entry.name}: ${steps} steps, ${closing} end with the check`,
    );
  }
  ok(files >= 5, `${files} files`);
});
