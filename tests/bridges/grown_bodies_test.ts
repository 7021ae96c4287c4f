// Covers: src/bridges/grown_bodies.ts
//
// A body parsed from a recent body's parse reads as JSON.parse reads it
// whole: over random conversations that grow, get edited, truncated and
// interleaved, written compact and indented, with keys in any order, with
// the constructs its scan must step over (escaped quotes and backslashes,
// brackets in strings, a nested `messages` key, an escaped key, a second
// `messages` key, NaN). Each test also checks that shared messages were
// taken from the previous parse, so that a reuse that never happens cannot
// pass.
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import { decide } from "../../src/bridges/decision.ts";
import { GrownBodies } from "../../src/bridges/grown_bodies.ts";
import { holdsUnsafeNumber } from "../../src/bridges/number_safety.ts";
import { parseJson } from "@incontext/engine/vllm";
import { FakeBackend } from "../../src/testing/mod.ts";
import { mulberry32, type Rand } from "../_kit/prng.ts";

type Message = Record<string, unknown>;

/** Text with what a scan of JSON text must step over. */
function content(random: Rand, length: number): string {
  const pieces = [
    "plain words ",
    'a "quoted" word ',
    "a back\\slash ",
    "brackets ] } [ { ",
    "commas, colons: ",
    '\\"',
    "\\\\",
    "é ü ",
    "\u2028",
    '"messages": [',
  ];
  let text = "";
  while (text.length < length) {
    text += pieces[Math.floor(random() * pieces.length)];
  }
  return text;
}

function message(random: Rand, n: number): Message {
  const roll = random();
  if (roll < 0.4) return { role: "user", content: content(random, 1500) };
  if (roll < 0.7) {
    return {
      role: "assistant",
      content: "",
      tool_calls: [{
        id: `call_${n}`,
        type: "function",
        function: { name: "read", arguments: `{"n": ${n}}` },
      }],
    };
  }
  return {
    role: "tool",
    tool_call_id: `call_${n}`,
    content: content(random, 2500),
  };
}

/** A body around `messages`, its keys and spacing picked at random. */
function body(messages: Message[], style: number): string {
  const fields: [string, unknown][] = [
    ["model", "m"],
    ["messages", messages],
    ["tools", [{
      type: "function",
      function: { name: "t", parameters: { messages: ["not", "these"] } },
    }]],
    ["max_tokens", 65536],
  ];
  if (style % 2 === 1) fields.reverse();
  const value = Object.fromEntries(fields);
  return style >= 2 ? JSON.stringify(value, null, 2) : JSON.stringify(value);
}

Deno.test("a body that grew parses as JSON.parse reads it, its shared messages the previous parse's objects", () => {
  const random = mulberry32(20261207);
  const bodies = new GrownBodies();
  let parses = 0;
  let reused = 0;
  for (let trial = 0; trial < 6; trial++) {
    const style = trial % 4;
    const conversations: Message[][] = [[], []].map(() =>
      Array.from({ length: 30 }, (_, n) => message(random, n))
    );
    let previous = new Map<number, unknown[]>();
    for (let step = 0; step < 40; step++) {
      const k = Math.floor(random() * conversations.length);
      let messages = conversations[k]!;
      const roll = random();
      if (roll < 0.1) {
        messages[Math.floor(random() * messages.length)] = message(
          random,
          step,
        );
      } else if (roll < 0.18) {
        messages = messages.slice(0, -2);
      } else {
        messages = [...messages, message(random, step), message(random, step)];
      }
      conversations[k] = messages;
      const text = body(messages, style);
      const parsed = bodies.parse(text);
      deepStrictEqual(
        parsed.value,
        JSON.parse(text),
        `trial ${trial}, step ${step}`,
      );
      strictEqual(parsed.constants, false);
      parses++;
      const now = (parsed.value as { messages: unknown[] }).messages;
      const before = previous.get(k);
      if (before !== undefined && now[0] === before[0]) reused++;
      previous = new Map(previous).set(k, now);
    }
  }
  ok(reused > parses / 2, `${reused} of ${parses} bodies took messages over`);
});

Deno.test("a body its scan cannot follow is parsed whole", async (t) => {
  const random = mulberry32(7);
  const messages = Array.from({ length: 80 }, (_, n) => message(random, n));
  const grown = [...messages, message(random, 80)];
  const cases: Record<string, (list: Message[]) => string> = {
    "a second messages key, which JSON.parse keeps": (list) =>
      `{"messages": ${JSON.stringify(list)}, "model": "m", "messages": ${
        JSON.stringify(list.slice(0, 3))
      }}`,
    "the key escaped": (list) =>
      `{"model": "m", "messag\\u0065s": ${JSON.stringify(list)}}`,
    "NaN, which Python reads": (list) =>
      `{"messages": ${JSON.stringify(list)}, "temperature": NaN}`,
    "messages that are not a list": (list) =>
      `{"messages": {"list": ${JSON.stringify(list)}}}`,
  };
  for (const [name, write] of Object.entries(cases)) {
    await t.step(name, () => {
      const bodies = new GrownBodies();
      for (const list of [messages, grown]) {
        const text = write(list);
        deepStrictEqual(bodies.parse(text), parseJson(text));
      }
    });
  }
  await t.step(
    "a body after one whose second messages key JSON.parse kept",
    () => {
      // The first body's first list spells the next body's first messages,
      // but its value holds the second list.
      const bodies = new GrownBodies();
      const other = Array.from({ length: 80 }, (_, n) => message(random, n));
      const first = `{"messages": ${JSON.stringify(messages)}, "messages": ${
        JSON.stringify(other)
      }}`;
      deepStrictEqual(bodies.parse(first), parseJson(first));
      const next = `{"messages": ${JSON.stringify(grown)}}`;
      deepStrictEqual(bodies.parse(next), parseJson(next));
    },
  );
  await t.step("the escaped key still takes the messages over", () => {
    const bodies = new GrownBodies();
    const first = bodies.parse(cases["the key escaped"]!(messages));
    const second = bodies.parse(cases["the key escaped"]!(grown));
    const list = (value: unknown) =>
      (value as { messages: unknown[] }).messages;
    strictEqual(list(second.value)[0], list(first.value)[0]);
  });
  await t.step("text that is not JSON throws as JSON.parse does", () => {
    const bodies = new GrownBodies();
    bodies.parse(body(messages, 0));
    const broken = body(grown, 0).slice(0, -1);
    let error: unknown;
    try {
      bodies.parse(broken);
    } catch (caught) {
      error = caught;
    }
    ok(error instanceof SyntaxError);
  });
});

Deno.test("a number JavaScript cannot hold is found in the messages a body added", () => {
  const random = mulberry32(11);
  const bodies = new GrownBodies();
  const messages = Array.from({ length: 80 }, (_, n) => message(random, n));
  const first = bodies.parse(body(messages, 0)).value;
  strictEqual(bodies.holdsUnsafeNumber(first), false);
  const unsafe =
    `{"role": "user", "content": "x", "seed": 18446744073709551615}`;
  const text = body(messages, 0).replace(
    /\]\s*,\s*"tools"/,
    `, ${unsafe}], "tools"`,
  );
  const second = bodies.parse(text).value;
  strictEqual(
    (second as { messages: unknown[] }).messages[0],
    (first as { messages: unknown[] }).messages[0],
  );
  strictEqual(bodies.holdsUnsafeNumber(second), true);
  strictEqual(holdsUnsafeNumber(second), true);
});

Deno.test("decide() sends the same with and without the recent bodies", async () => {
  const random = mulberry32(5);
  const bodies = new GrownBodies();
  const encoder = new TextEncoder();
  let messages = Array.from({ length: 80 }, (_, n) => message(random, n));
  for (let step = 0; step < 12; step++) {
    messages = [...messages, message(random, step)];
    const text = step === 7
      ? body(messages, 2).replace(
        '"max_tokens": 65536',
        '"max_tokens": 65536, "seed": 18446744073709551615',
      )
      : body(messages, step % 4);
    const decisions = await Promise.all(
      [undefined, bodies].map((reuse) =>
        decide(encoder.encode(text), {
          kind: "chat",
          bridge: {
            window: 200_000,
            contextLength: 262_144,
            backend: new FakeBackend({ count: 5000 }),
          },
          ...(reuse ? { bodies: reuse } : {}),
        })
      ),
    );
    const [plain, reused] = decisions.map((decision) =>
      decision.kind === "send"
        ? [decision.body, decision.headers, decision.result.action]
        : decision.kind
    );
    deepStrictEqual(reused, plain, `step ${step}`);
  }
});
