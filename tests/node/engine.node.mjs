// The engine under Node: `prove.ts` writes the model folders and the cases
// (each rendered, counted and tokenized under Deno) into the Node project,
// installs the packed engine with the dependencies its package.json pins,
// and runs this file with `node --test`. Every render, count and id must be
// what Deno made of the same case.
import { readFile } from "node:fs/promises";
import { test } from "node:test";
import { deepStrictEqual, ok, rejects, strictEqual } from "node:assert/strict";
import {
  createEngine,
  EngineError,
  RequestRejectedError,
} from "@incontext/engine";
import { laxPositiveInteger, vllmRules } from "@incontext/engine/vllm";

const cases = JSON.parse(await readFile("engine_cases.json", "utf8"));

test("the engine renders, counts and tokenizes as under Deno", async (t) => {
  ok(cases.length >= 32, `only ${cases.length} cases`);
  const engine = createEngine({
    store() {},
    epoch: () => 0,
    pieces: new Map(),
  });
  for (const [i, expected] of cases.entries()) {
    const { family, payload, render, count, ids, rejected } = expected;
    await t.test(`${family}, case ${i}`, async () => {
      const spec = { dir: `model_folders/${family}` };
      const job = { spec, kind: "chat", payload };
      if (rejected !== undefined) {
        await rejects(engine.run({ op: "render", ...job }), (error) => {
          ok(error instanceof RequestRejectedError);
          strictEqual(error.name, rejected);
          return true;
        });
        return;
      }
      strictEqual(await engine.run({ op: "render", ...job }), render);
      strictEqual(await engine.run({ op: "count", ...job }), count);
      deepStrictEqual(
        await engine.run({ op: "tokenize", spec, body: payload }),
        ids,
      );
    });
  }
});

test("the engine's errors and vLLM's rules load under Node", async () => {
  const engine = createEngine({
    store() {},
    epoch: () => 0,
    pieces: new Map(),
  });
  await engine.run({ op: "nothing" }).then(
    () => ok(false, "an unknown operation resolved"),
    (error) => ok(error instanceof EngineError, String(error)),
  );
  strictEqual(laxPositiveInteger("512"), 512);
  strictEqual(vllmRules().release, "0.20.0");
});
