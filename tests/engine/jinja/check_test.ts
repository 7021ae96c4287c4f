// Covers: packages/engine/src/jinja/check.ts, packages/engine/src/jinja/interpreter.ts
// The compiled checks of reused loop items (packages/engine/src/jinja/check.ts) give the
// value the interpreter gives, or hand over to it: random expressions of
// the compiled shapes (and of others) over random scopes, compared.
import { ok } from "node:assert/strict";
import type { Expr } from "../../../packages/engine/src/jinja/ast.ts";
import { globalsFor } from "../../../packages/engine/src/jinja/globals.ts";
import { compileCheck } from "../../../packages/engine/src/jinja/check.ts";
import { evaluateExpression } from "../../../packages/engine/src/jinja/interpreter.ts";
import { alike } from "../../../packages/engine/src/jinja/memo.ts";
import { parseTemplate } from "../../../packages/engine/src/jinja/parse.ts";
import { type Node, Scope } from "../../../packages/engine/src/jinja/scope.ts";
import {
  toValue,
  type Value,
} from "../../../packages/engine/src/jinja/values.ts";
import { mulberry32, type Rand } from "../../_kit/prng.ts";

/** The node of one expression, as a template holds it. */
function expression(source: string): Expr {
  return parseTemplate(`{{ ${source} }}`).program.body[0] as Expr;
}

function pick<T>(random: Rand, list: readonly T[]): T {
  return list[Math.floor(random() * list.length)]!;
}

const LEAVES = [
  "0",
  "1",
  "-1",
  "7",
  "'a'",
  "''",
  "1.5",
  "i",
  "j",
  "b",
  "c",
  "s",
  "xs",
  "m",
  "ns",
  "missing",
  "none",
  "true",
  "false",
  "m.k",
  "m.b",
  "m.missing",
  "ns.x",
  "ns.flag",
  "xs.items",
  "s.upper",
  "i.x",
  "missing.x",
  "m['k']",
  "xs[0]",
  "xs[i]",
  "xs[j - 1]",
  "ms[i].k",
  "ms[i + 1].k",
  "ms[j]",
  "ms[b]",
  "m[i]",
];
const BINARY = [
  "and",
  "or",
  "+",
  "-",
  "*",
  "<",
  ">",
  "<=",
  ">=",
  "==",
  "!=",
  "~",
  "in",
  "//",
  "%",
];

function randomExpression(random: Rand, depth: number): string {
  const roll = random();
  if (depth <= 0 || roll < 0.3) return pick(random, LEAVES);
  const inner = () => randomExpression(random, depth - 1);
  if (roll < 0.65) return `(${inner()} ${pick(random, BINARY)} ${inner()})`;
  if (roll < 0.75) return `(not ${inner()})`;
  if (roll < 0.8) return `(-${inner()})`;
  if (roll < 0.87) return `(${inner()} | length)`;
  if (roll < 0.92) return `(${inner()} is string)`;
  if (roll < 0.94) return `(${inner()} if ${inner()} else ${inner()})`;
  if (roll < 0.96) return `${pick(random, ["xs", "ms", "s"])}[${inner()}]`;
  return `range(${inner()})`;
}

function randomScope(random: Rand): Scope {
  const root = new Scope();
  const globals = globalsFor({
    now: () => new Date(2026, 10, 30),
    raise: (message) => {
      throw new Error(message);
    },
  });
  for (const [name, value] of globals) root.setVariable(name, value);
  const scope = new Scope(root);
  const int = () => Math.floor(random() * 7) - 2;
  const values: Record<string, unknown> = {
    i: int(),
    j: int(),
    b: random() < 0.5,
    c: random() < 0.5,
    s: pick(random, ["", "a", "ab"]),
    xs: Array.from({ length: Math.floor(random() * 3) }, int),
    m: { k: int(), b: random() < 0.5 },
    ms: Array.from(
      { length: Math.floor(random() * 4) },
      () => ({ k: int(), b: random() < 0.5 }),
    ),
  };
  for (const [name, value] of Object.entries(values)) {
    scope.setVariable(name, toValue(value));
  }
  const namespace = root.lookup("namespace").value as (
    args: Value[],
  ) => Value;
  scope.setVariable(
    "ns",
    namespace([toValue({ x: int(), flag: random() < 0.5 })]),
  );
  return scope;
}

const EXPRESSIONS = 12000;

Deno.test("compiled checks give the interpreter's value or hand over to it", () => {
  const random = mulberry32(20261130);
  let compiled = 0;
  let answered = 0;
  for (let n = 0; n < EXPRESSIONS; n++) {
    const source = randomExpression(random, 3);
    const node = expression(source);
    const check = compileCheck(node as Node);
    if (check === null) continue;
    compiled++;
    for (let k = 0; k < 4; k++) {
      const scope = randomScope(random);
      let fast: Value | undefined;
      let fastError: unknown;
      try {
        fast = check(scope);
      } catch (error) {
        fastError = error;
      }
      let slow: Value | undefined;
      let slowError: unknown;
      try {
        slow = evaluateExpression(node, scope);
      } catch (error) {
        slowError = error;
      }
      if (fast === undefined && fastError === undefined) continue;
      answered++;
      if (fastError !== undefined) {
        // A global the check called threw: the interpreter's call throws too.
        ok(slowError !== undefined, `${source}: only the check threw`);
        continue;
      }
      ok(slowError === undefined, `${source}: only the interpreter threw`);
      ok(
        alike(fast!, slow!),
        `${source}: ${fast!.type} ${String(fast!.value)} vs ${slow!.type} ${
          String(slow!.value)
        }`,
      );
    }
  }
  console.log(
    `template checks: ${compiled} of ${EXPRESSIONS} random expressions compiled; ${answered} evaluations answered without the interpreter, all alike`,
  );
  ok(compiled > 1500 && answered > 3000);
});
