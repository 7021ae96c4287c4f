/**
 * Random request objects for the fuzz test: every shape budget() meets
 * (chat, completion, Responses) and garbage, caps of every type at both
 * levels, `extra_body` variants, nested junk, unicode, and `__proto__` /
 * `constructor` keys made own properties by JSON.parse.
 */

import type { Rand } from "../_kit/prng.ts";

export { mulberry32, type Rand } from "../_kit/prng.ts";

export function int(rand: Rand, below: number): number {
  return Math.floor(rand() * below);
}

export function pick<T>(rand: Rand, items: readonly T[]): T {
  return items[int(rand, items.length)]!;
}

const CAP_FIELDS = ["max_tokens", "max_completion_tokens", "max_output_tokens"];

/** Cap values of every type, including those vLLM's lax reading accepts. */
const CAP_VALUES: readonly unknown[] = [
  undefined,
  null,
  true,
  false,
  0,
  -0,
  1,
  2,
  7,
  300,
  4095,
  4096,
  4097,
  50_000,
  65_536,
  1e6,
  Number.MAX_SAFE_INTEGER,
  2 ** 53,
  1e300,
  -1,
  -4096,
  1.5,
  4096.000001,
  Number.NaN,
  Infinity,
  -Infinity,
  "2048",
  " 5 ",
  "+5",
  "5.0",
  "1_0",
  "_1",
  "-5",
  "0",
  "",
  "abc",
  "1e3",
  "0x10",
  "\u0663",
  "9".repeat(30),
  "\u00a0300\u2003",
  [],
  [100],
  {},
  { value: 100 },
];

const TEXTS: readonly string[] = [
  "",
  "hi",
  "What is the capital of France?",
  "word ".repeat(200),
  "\u4f60\u597d\u4e16\u754c",
  "\ud83e\udd80\ud83e\udd80 emoji",
  "lone \ud800 surrogate",
  "e\u0301 combining",
  "\u0645\u0631\u062d\u0628\u0627 \u202e rtl",
  "\u0000 nul",
  "<|im_end|><|im_start|>system",
  "__proto__",
  "max_tokens",
];

/** Stands for `__proto__` until JSON.parse turns it into an own key. */
const PROTO = "\u0001proto\u0001";
/** How JSON.stringify writes the stand-in key. */
const PROTO_JSON = JSON.stringify(PROTO);

const KEYS: readonly string[] = [
  "a",
  "type",
  "text",
  "content",
  "messages",
  "max_tokens",
  "extra_body",
  "constructor",
  "prototype",
  "toString",
  "hasOwnProperty",
  "\u00e9",
  "",
  PROTO,
];

/** A random JSON-ish value: scalars, unicode, arrays and objects, `depth` deep at most. */
export function junk(rand: Rand, depth: number): unknown {
  const roll = int(rand, depth > 0 ? 10 : 7);
  switch (roll) {
    case 0:
      return null;
    case 1:
      return rand() < 0.5;
    case 2:
      return pick(rand, [0, -1, 1.5, 42, 1e21, Number.NaN, -Infinity]);
    case 3:
    case 4:
      return pick(rand, TEXTS);
    case 5:
      return pick(rand, CAP_VALUES);
    case 6:
      return undefined;
    case 7:
      return Array.from({ length: int(rand, 4) }, () => junk(rand, depth - 1));
    default: {
      const object: Record<string, unknown> = {};
      for (let i = int(rand, 4); i > 0; i--) {
        object[pick(rand, KEYS)] = junk(rand, depth - 1);
      }
      return object;
    }
  }
}

/** A value nested `depth` levels deep, in arrays or objects. */
function deep(rand: Rand, depth: number): unknown {
  let value: unknown = junk(rand, 0);
  for (let i = 0; i < depth; i++) {
    value = rand() < 0.5 ? [value] : { [pick(rand, KEYS)]: value };
  }
  return value;
}

/** Mostly a plausible value made by `make`, sometimes junk of any type. */
function usually(rand: Rand, make: () => unknown): unknown {
  return rand() < 0.85 ? make() : junk(rand, 2);
}

function part(rand: Rand): unknown {
  return pick(rand, [
    () => ({ type: "text", text: pick(rand, TEXTS) }),
    () => ({ type: "image_url", image_url: { url: "data:," } }),
    () => ({ type: "input_text", text: pick(rand, TEXTS) }),
    () => ({ type: "input_image", image_url: "data:," }),
    () => junk(rand, 2),
  ])();
}

function content(rand: Rand): unknown {
  return pick(rand, [
    () => pick(rand, TEXTS),
    () => Array.from({ length: int(rand, 4) }, () => part(rand)),
    () => null,
    () => junk(rand, 3),
  ])();
}

function message(rand: Rand): unknown {
  const item: Record<string, unknown> = {
    role: usually(rand, () => pick(rand, ["system", "user", "assistant"])),
    content: content(rand),
  };
  if (rand() < 0.2) item.reasoning_content = pick(rand, TEXTS);
  if (rand() < 0.2) {
    item.tool_calls = usually(rand, () => [{
      id: "call_1",
      type: "function",
      function: {
        name: pick(rand, TEXTS),
        arguments: rand() < 0.5 ? pick(rand, TEXTS) : junk(rand, 3),
      },
    }]);
  }
  if (rand() < 0.05) item[pick(rand, KEYS)] = deep(rand, int(rand, 100));
  return usually(rand, () => item);
}

function inputItem(rand: Rand): unknown {
  return pick(rand, [
    () => message(rand),
    () => ({
      type: "function_call",
      name: pick(rand, TEXTS),
      arguments: pick(rand, TEXTS),
    }),
    () => ({ type: "function_call_output", output: content(rand) }),
    () => junk(rand, 2),
  ])();
}

function tools(rand: Rand): unknown {
  return usually(rand, () =>
    Array.from({ length: int(rand, 3) }, () => ({
      type: "function",
      function: {
        name: pick(rand, TEXTS),
        description: pick(rand, TEXTS),
        parameters: rand() < 0.1 ? deep(rand, int(rand, 100)) : junk(rand, 3),
      },
    })));
}

const list = <T>(rand: Rand, make: () => T, most: number): T[] =>
  Array.from({ length: int(rand, most) }, make);

/** The body fields of one shape, or garbage. */
function body(rand: Rand): Record<string, unknown> {
  const shape = int(rand, 4);
  const fields: Record<string, unknown> = {};
  if (rand() < 0.9) fields.model = usually(rand, () => pick(rand, ["m", "q"]));
  if (shape === 0) {
    fields.messages = usually(rand, () => list(rand, () => message(rand), 6));
  } else if (shape === 1) {
    fields.prompt = usually(rand, () => pick(rand, TEXTS));
  } else if (shape === 2) {
    fields.input = usually(
      rand,
      () =>
        rand() < 0.3 ? pick(rand, TEXTS) : list(rand, () => inputItem(rand), 5),
    );
    if (rand() < 0.5) fields.instructions = junk(rand, 1);
  } else {
    for (let i = int(rand, 5); i > 0; i--) {
      fields[pick(rand, [...KEYS, "messages", "prompt", "input"])] = junk(
        rand,
        3,
      );
    }
  }
  if (rand() < 0.3) fields.tools = tools(rand);
  if (rand() < 0.1) fields.truncate_prompt_tokens = pick(rand, CAP_VALUES);
  if (rand() < 0.1) fields.tool_choice = junk(rand, 1);
  return fields;
}

function addCaps(rand: Rand, level: Record<string, unknown>, p: number): void {
  for (const field of CAP_FIELDS) {
    if (rand() < p) level[field] = pick(rand, CAP_VALUES);
  }
}

function extraBody(rand: Rand): unknown {
  return pick(rand, [
    () => ({}),
    () => null,
    () => undefined,
    () => junk(rand, 2),
    () => {
      const extra: Record<string, unknown> = {};
      addCaps(rand, extra, 0.4);
      if (rand() < 0.3) Object.assign(extra, body(rand));
      if (rand() < 0.1) extra.extra_body = { max_tokens: 1 };
      return extra;
    },
  ])();
}

/** Objects that would do harm as a prototype. */
const POISON: readonly unknown[] = [
  { max_tokens: 1 },
  { polluted: true },
  { extra_body: { max_tokens: 1 } },
  { messages: [{ role: "user", content: "x" }] },
];

/** A generated request, and whether it carries own `__proto__` keys. */
export interface Generated {
  readonly request: unknown;
  readonly protoKeys: boolean;
}

/** A random request: mostly an object of one shape, sometimes not an object at all. */
export function randomRequest(rand: Rand): Generated {
  if (rand() < 0.03) {
    return { request: pick(rand, [null, [], "{}", 42]), protoKeys: false };
  }
  const request = body(rand);
  addCaps(rand, request, 0.3);
  if (rand() < 0.4) request.extra_body = extraBody(rand);
  // An own `constructor` key (a [[Set]] shadows the inherited one).
  if (rand() < 0.05) {
    Object.assign(request, { constructor: pick(rand, POISON) });
  }
  if (rand() < 0.15) {
    // Own __proto__ keys at the top level or in extra_body (junk puts them deeper).
    const target = rand() < 0.5 || typeof request.extra_body !== "object" ||
        request.extra_body === null
      ? request
      : request.extra_body as Record<string, unknown>;
    target[PROTO] = pick(rand, POISON);
  }
  const text = JSON.stringify(request);
  if (!text.includes(PROTO_JSON)) return { request, protoKeys: false };
  return {
    request: JSON.parse(text.replaceAll(PROTO_JSON, '"__proto__"')),
    protoKeys: true,
  };
}
