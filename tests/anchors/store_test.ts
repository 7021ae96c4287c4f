// Covers: src/anchors/store.ts, src/anchors/canonical.ts, src/anchors/chains.ts
import {
  deepStrictEqual,
  notStrictEqual,
  strictEqual,
  throws,
} from "node:assert/strict";
import { createHash } from "node:crypto";
import { AnchorStore, canonicalMessage } from "../../src/anchors/store.ts";
import { canonicalMessageGeneral } from "../../src/anchors/canonical.ts";

const MODEL = "qwen3-8b";

type Message = Record<string, unknown>;

function user(text: string): Message {
  return { role: "user", content: text };
}

function assistant(text: string): Message {
  return { role: "assistant", content: text };
}

/** An assistant turn that calls a tool, as the openai SDK echoes it back. */
const CALL_AS_RECEIVED: Message = {
  role: "assistant",
  content: null,
  refusal: null,
  audio: null,
  tool_calls: [{
    id: "call_1",
    type: "function",
    function: {
      name: "read_file",
      arguments: '{"path":"a.ts","lines":[1,20]}',
    },
  }],
};

/** The same turn after an SDK re-serialised it. */
const CALL_AS_RESENT: Message = {
  tool_calls: [{
    function: {
      arguments: '{ "lines": [1, 20], "path": "a.ts" }',
      name: "read_file",
    },
    type: "function",
    id: "call_1",
  }],
  role: "assistant",
};

Deno.test("AnchorStore.lookup() matches the longest recorded prefix of a growing conversation", () => {
  const store = new AnchorStore();
  const turn1 = [{ role: "system", content: "Be brief." }, user("Hi")];
  const turn2 = [...turn1, assistant("Hello!"), user("List files")];
  const turn3 = [
    ...turn2,
    CALL_AS_RECEIVED,
    { role: "tool", tool_call_id: "call_1", content: "a.ts" },
  ];
  const turn4 = [...turn3, assistant("One file."), user("Thanks")];
  strictEqual(store.lookup(MODEL, turn1), undefined);
  store.record(MODEL, turn1, { promptTokens: 20, completionTokens: 3 });
  deepStrictEqual(store.lookup(MODEL, turn2), {
    promptTokens: 20,
    completionTokens: 3,
    prefixLength: 2,
  });
  store.record(MODEL, turn2, { promptTokens: 35, completionTokens: 12 });
  deepStrictEqual(store.lookup(MODEL, turn3), {
    promptTokens: 35,
    completionTokens: 12,
    prefixLength: 4,
  });
  store.record(MODEL, turn3, { promptTokens: 70, completionTokens: 4 });
  deepStrictEqual(store.lookup(MODEL, turn4), {
    promptTokens: 70,
    completionTokens: 4,
    prefixLength: 6,
  });
  // A retry of a recorded request matches it whole.
  deepStrictEqual(store.lookup(MODEL, turn2)?.prefixLength, 4);
  strictEqual(store.size, 3);
});

Deno.test("AnchorStore.lookup() matches a re-serialised assistant message", () => {
  const store = new AnchorStore();
  const before = [user("List files"), CALL_AS_RECEIVED];
  store.record(MODEL, before, { promptTokens: 50, completionTokens: 9 });
  const resent = [user("List files"), CALL_AS_RESENT, user("Go on")];
  deepStrictEqual(store.lookup(MODEL, resent), {
    promptTokens: 50,
    completionTokens: 9,
    prefixLength: 2,
  });
});

Deno.test("AnchorStore.lookup() does not match a changed earlier message", () => {
  const store = new AnchorStore();
  const turn = [user("one"), assistant("two"), user("three")];
  store.record(MODEL, turn, { promptTokens: 10, completionTokens: 2 });
  const edited = [user("one!"), assistant("two"), user("three"), user("four")];
  strictEqual(store.lookup(MODEL, edited), undefined);
  const reordered = [assistant("two"), user("one"), user("three")];
  strictEqual(store.lookup(MODEL, reordered), undefined);
  strictEqual(store.lookup(MODEL, turn.slice(0, 2)), undefined);
});

Deno.test("AnchorStore.lookup() does not match another model", () => {
  const store = new AnchorStore();
  const turn = [user("one")];
  store.record(MODEL, turn, { promptTokens: 10, completionTokens: 2 });
  strictEqual(store.lookup("llama-3-8b", [...turn, user("two")]), undefined);
  notStrictEqual(store.lookup(MODEL, [...turn, user("two")]), undefined);
});

Deno.test("AnchorStore keeps the order when the newest anchor is used again", () => {
  const store = new AnchorStore({ maxEntries: 2 });
  const usage = { promptTokens: 1, completionTokens: 1 };
  store.record(MODEL, [user("a")], usage);
  store.lookup(MODEL, [user("a")]); // already the newest: nothing moves
  store.record(MODEL, [user("b")], usage);
  // "b" is the newest now, so this lookup must move "a" after it.
  notStrictEqual(store.lookup(MODEL, [user("a")]), undefined);
  store.record(MODEL, [user("c")], usage);
  strictEqual(store.lookup(MODEL, [user("b")]), undefined);
  notStrictEqual(store.lookup(MODEL, [user("a")]), undefined);
  // Recorded again as the newest, in place: still one entry of its length.
  store.record(MODEL, [user("a")], { promptTokens: 5, completionTokens: 6 });
  store.record(MODEL, [user("a")], { promptTokens: 7, completionTokens: 8 });
  strictEqual(store.size, 2);
  deepStrictEqual(store.lookup(MODEL, [user("a"), user("x")]), {
    promptTokens: 7,
    completionTokens: 8,
    prefixLength: 1,
  });
  store.record(MODEL, [user("d")], usage); // "c" goes
  strictEqual(store.lookup(MODEL, [user("c")]), undefined);
  store.clear();
  store.record(MODEL, [user("e")], usage);
  store.record(MODEL, [user("f")], usage);
  store.lookup(MODEL, [user("e")]);
  store.record(MODEL, [user("g")], usage); // "f" goes
  strictEqual(store.lookup(MODEL, [user("f")]), undefined);
  notStrictEqual(store.lookup(MODEL, [user("e")]), undefined);
});

Deno.test("AnchorStore.record() evicts the least recently used anchor at maxEntries", () => {
  const store = new AnchorStore({ maxEntries: 2 });
  const usage = { promptTokens: 1, completionTokens: 1 };
  store.record(MODEL, [user("a")], usage);
  store.record(MODEL, [user("b")], usage);
  // The lookup makes "a" recent, so "b" is the one to go.
  notStrictEqual(store.lookup(MODEL, [user("a"), user("x")]), undefined);
  store.record(MODEL, [user("c")], usage);
  strictEqual(store.size, 2);
  strictEqual(store.lookup(MODEL, [user("b")]), undefined);
  notStrictEqual(store.lookup(MODEL, [user("a")]), undefined);
  notStrictEqual(store.lookup(MODEL, [user("c")]), undefined);
  // Recording a known conversation again updates it in place.
  store.record(MODEL, [user("c")], { promptTokens: 7, completionTokens: 8 });
  strictEqual(store.size, 2);
  deepStrictEqual(store.lookup(MODEL, [user("c")]), {
    promptTokens: 7,
    completionTokens: 8,
    prefixLength: 1,
  });
});

Deno.test("AnchorStore.clear() forgets every anchor", () => {
  const store = new AnchorStore();
  store.record(MODEL, [user("a")], { promptTokens: 1, completionTokens: 1 });
  strictEqual(store.size, 1);
  store.clear();
  strictEqual(store.size, 0);
  strictEqual(store.lookup(MODEL, [user("a")]), undefined);
});

Deno.test("AnchorStore.lookup() writes out only the messages a grown conversation added", () => {
  const store = new AnchorStore();
  let reads = 0;
  const messages = Array.from({ length: 1000 }, (_, i) => {
    const text = `message ${i}`;
    return {
      role: i % 2 === 0 ? "user" : "assistant",
      get content() {
        reads++;
        return text;
      },
    };
  });
  const usage = { promptTokens: 9000, completionTokens: 40 };
  store.record(MODEL, messages.slice(0, 10), usage);
  store.record(MODEL, messages.slice(0, 999), usage);
  reads = 0;
  deepStrictEqual(store.lookup(MODEL, messages), {
    ...usage,
    prefixLength: 999,
  });
  // The 999 messages hashed before are compared (one read each); only the
  // new one is written out canonically and taken a shape of.
  strictEqual(reads, 999 + 2);
});

/** The key of each prefix, as the anchor records' format defines it. */
function chainKeys(model: string, messages: readonly unknown[]): string[] {
  const hash = createHash("sha256").update(`${model}\u0000`);
  return messages.map((message) =>
    hash.update(`${canonicalMessage(message)}\u0000`).copy().digest("hex")
  );
}

Deno.test("AnchorStore keys are SHA-256 chains over the model and the canonical messages, however the conversation was hashed before", () => {
  const turns = Array.from(
    { length: 12 },
    (_, i) => i % 2 === 0 ? user(`q${i}`) : assistant(`a${i}`),
  );
  const expected = chainKeys(MODEL, turns);
  const keysOf = (store: AnchorStore, messages: readonly unknown[]) =>
    store.prefixKeys(MODEL, messages, 1).map(([, key]) => key);
  // Fresh, and grown turn by turn (each extending the chain before).
  deepStrictEqual(keysOf(new AnchorStore(), turns), expected);
  const grown = new AnchorStore();
  for (let n = 1; n <= turns.length; n++) {
    deepStrictEqual(keysOf(grown, turns.slice(0, n)), expected.slice(0, n));
    strictEqual(grown.keys(MODEL, turns.slice(0, n)).full, expected[n - 1]);
  }
  // Parsed again (other objects, equal), then cut back and grown again.
  deepStrictEqual(keysOf(grown, structuredClone(turns)), expected);
  deepStrictEqual(keysOf(grown, turns.slice(0, 5)), expected.slice(0, 5));
  deepStrictEqual(keysOf(grown, turns), expected);
  // An earlier message edited: every key from it on differs.
  const edited = [...turns];
  edited[3] = assistant("edited");
  deepStrictEqual(keysOf(grown, edited), chainKeys(MODEL, edited));
  // A message changed in place after it was hashed.
  const mutable = structuredClone(turns);
  keysOf(grown, mutable);
  mutable[7]!.content = "changed in place";
  deepStrictEqual(keysOf(grown, mutable), chainKeys(MODEL, mutable));
  // More conversations interleaved than the store remembers chains of.
  const others = Array.from(
    { length: 6 },
    (_, c) =>
      turns.map((message) => ({
        ...message,
        content: `${c} ${message.content}`,
      })),
  );
  for (let n = 1; n <= turns.length; n++) {
    for (const other of others) {
      const prefix = other.slice(0, n);
      deepStrictEqual(keysOf(grown, prefix), chainKeys(MODEL, prefix));
    }
  }
  // Another model is another chain.
  deepStrictEqual(
    grown.prefixKeys("other", turns, 11).map(([, key]) => key),
    chainKeys("other", turns).slice(10),
  );
});

Deno.test("AnchorStore.record() ignores an empty conversation", () => {
  const store = new AnchorStore();
  store.record(MODEL, [], { promptTokens: 1, completionTokens: 1 });
  strictEqual(store.size, 0);
});

Deno.test("AnchorStore rejects invalid arguments", () => {
  for (const maxEntries of [0, -1, 1.5, NaN]) {
    throws(() => new AnchorStore({ maxEntries }), {
      name: "RangeError",
      message:
        `Cannot create the anchor store as 'maxEntries' must be a positive integer: current value is ${maxEntries}`,
    });
  }
  const store = new AnchorStore();
  throws(
    () =>
      store.record(MODEL, [user("a")], {
        promptTokens: -1,
        completionTokens: 1,
      }),
    { name: "RangeError" },
  );
  throws(
    () => store.lookup(MODEL, "hi" as unknown as unknown[]),
    { name: "TypeError" },
  );
  throws(
    () => store.lookup(1 as unknown as string, []),
    { name: "TypeError" },
  );
});

Deno.test("canonicalMessage() makes re-serialised messages equal", async (t) => {
  const same = (a: unknown, b: unknown) =>
    strictEqual(canonicalMessage(a), canonicalMessage(b));
  const differ = (a: unknown, b: unknown) =>
    notStrictEqual(canonicalMessage(a), canonicalMessage(b));
  await t.step("sorts keys at every depth", () => {
    same(
      {
        role: "user",
        content: [{
          type: "image_url",
          image_url: { url: "u", detail: "low" },
        }],
      },
      {
        content: [{
          image_url: { detail: "low", url: "u" },
          type: "image_url",
        }],
        role: "user",
      },
    );
    strictEqual(
      canonicalMessage({ b: 1, a: { d: 2, c: 3 } }),
      '{"a":{"c":3,"d":2},"b":1}',
    );
  });
  await t.step("drops null and undefined properties", () => {
    same(
      {
        role: "assistant",
        content: "x",
        refusal: null,
        audio: null,
        tool_calls: null,
      },
      { role: "assistant", content: "x" },
    );
    same({ role: "user", content: "x", name: undefined }, {
      role: "user",
      content: "x",
    });
    same(
      {
        role: "user",
        content: [{ type: "image_url", image_url: { url: "u", detail: null } }],
      },
      {
        role: "user",
        content: [{ type: "image_url", image_url: { url: "u" } }],
      },
    );
    // Array elements keep their places.
    differ({ role: "user", content: [null, "x"] }, {
      role: "user",
      content: ["x"],
    });
  });
  await t.step("drops an empty tool_calls array", () => {
    same({ role: "assistant", content: "x", tool_calls: [] }, {
      role: "assistant",
      content: "x",
    });
    differ(
      { role: "assistant", content: "x", tool_calls: [{}] },
      { role: "assistant", content: "x" },
    );
  });
  await t.step("compares tool-call arguments as parsed JSON", () => {
    same(CALL_AS_RECEIVED, CALL_AS_RESENT);
    const call = (args: string) => ({
      role: "assistant",
      tool_calls: [{
        id: "c",
        type: "function",
        function: { name: "f", arguments: args },
      }],
    });
    same(call('{"a":1}'), call('{"a": 1}'));
    differ(call('{"a":1}'), call('{"a":2}'));
    // A null argument is the model's output, not serialisation noise.
    differ(call('{"a":null}'), call("{}"));
    // Arguments that are not JSON are compared as text.
    same(call('{"a":'), call('{"a":'));
    differ(call('{"a":'), call('{"a": '));
    // A JSON string literal does not collide with its unquoted text.
    differ(call('"x"'), call("x"));
    same(
      {
        role: "assistant",
        function_call: { name: "f", arguments: '{"a": 1}' },
      },
      { role: "assistant", function_call: { name: "f", arguments: '{"a":1}' } },
    );
    same(
      { type: "function_call", call_id: "c", name: "f", arguments: '{"a": 1}' },
      { type: "function_call", call_id: "c", name: "f", arguments: '{"a":1}' },
    );
  });
  await t.step("equates string content with a single text part", () => {
    same({ role: "user", content: "hi" }, {
      role: "user",
      content: [{ type: "text", text: "hi" }],
    });
    same(
      { role: "user", content: "hi" },
      {
        role: "user",
        content: [{ text: "hi", type: "text", cache_control: null }],
      },
    );
    differ(
      { role: "user", content: "hi" },
      {
        role: "user",
        content: [{ type: "text", text: "h" }, { type: "text", text: "i" }],
      },
    );
    differ(
      { role: "user", content: "hi" },
      {
        role: "user",
        content: [{
          type: "text",
          text: "hi",
          cache_control: { type: "ephemeral" },
        }],
      },
    );
  });
  await t.step("keeps every other value", () => {
    differ({ role: "user", content: "x" }, { role: "user", content: "x " });
    differ({ role: "user", content: "" }, { role: "user" });
    differ({ role: "user", content: "1" }, { role: "user", content: 1 });
    differ({ role: "user", content: "x" }, { role: "assistant", content: "x" });
    strictEqual(canonicalMessage("text"), '"text"');
    strictEqual(canonicalMessage(null), "null");
  });
});

Deno.test("AnchorStore keeps its per-length index right through eviction and clear", () => {
  const store = new AnchorStore({ maxEntries: 1 });
  const a = [{ role: "user", content: "a" }, {
    role: "assistant",
    content: "A",
  }];
  const b = [{ role: "user", content: "b" }, {
    role: "assistant",
    content: "B",
  }];
  const usage = { promptTokens: 10, completionTokens: 2 };
  store.record("m", a, usage);
  store.record("m", b, usage); // evicts a; length 2 is still indexed for b
  strictEqual(
    store.lookup("m", [...a, { role: "user", content: "more" }]),
    undefined,
  );
  deepStrictEqual(
    store.lookup("m", [...b, { role: "user", content: "more" }]),
    { ...usage, prefixLength: 2 },
  );
  const keys = store.keys("m", [...b, { role: "user", content: "x" }]);
  deepStrictEqual(keys.prefixes.map(([length]) => length), [2]); // only lengths the store holds are hashed
  store.clear();
  deepStrictEqual(
    store.keys("m", [...b, { role: "user", content: "x" }]).prefixes,
    [],
  );
});

Deno.test("canonicalMessage() writes what its general path writes", async (t) => {
  // A small deterministic generator of message-like JSON values.
  let seed = 7;
  const next = (n: number) => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return seed % n;
  };
  const KEYS = [
    "role",
    "content",
    "name",
    "type",
    "text",
    "b",
    "a",
    "10",
    "9",
    "Z",
    "é",
    "",
  ];
  const value = (depth: number): unknown => {
    switch (next(depth > 2 ? 5 : 8)) {
      case 0:
        return null;
      case 1:
        return next(2) === 0 ? -0 : next(1000) / 7;
      case 2:
        return ["x", "", '\u0000\n"\\', "caf\u00e9 \ud83d\ude00"][next(4)];
      case 3:
        return next(2) === 0;
      case 4:
        return 2 ** 60;
      case 5:
        return Array.from({ length: next(4) }, () => value(depth + 1));
      default: {
        const object: Record<string, unknown> = {};
        for (let i = next(5); i > 0; i--) {
          object[KEYS[next(KEYS.length)]!] = value(depth + 1);
        }
        return object;
      }
    }
  };
  const message = (): unknown => {
    const drawn = value(0);
    const base = typeof drawn === "object" && drawn !== null &&
        !Array.isArray(drawn)
      ? drawn
      : { content: drawn };
    const extra: Record<string, unknown> = { role: "assistant" };
    switch (next(5)) {
      case 0:
        extra.tool_calls = next(2) === 0 ? [] : [{
          id: "c",
          type: "function",
          function: { name: "f", arguments: JSON.stringify(value(1)) },
        }];
        break;
      case 1:
        extra.content = [{ type: "text", text: "hi", cache_control: null }];
        break;
      case 2:
        Object.assign(extra, {
          type: "function_call",
          arguments: '{"b":null,"a":1}',
        });
        break;
      case 3:
        extra.function_call = {
          name: "f",
          arguments: '[1, {"z": 2, "y": null}]',
        };
        break;
    }
    return { ...base, ...extra };
  };
  await t.step("on generated messages", () => {
    for (let i = 0; i < 2000; i++) {
      const sample = message();
      // Through JSON, as a parsed body holds it (a "__proto__" key included).
      const parsed = JSON.parse(JSON.stringify(sample) ?? "null");
      strictEqual(
        canonicalMessage(parsed),
        canonicalMessageGeneral(parsed),
        JSON.stringify(parsed),
      );
    }
  });
  await t.step("on flat messages (string and null values)", () => {
    const FLAT_KEYS = [...KEYS, "arguments", "tool_call_id", "__proto__"];
    const STRINGS = [
      "x",
      "",
      "function_call",
      '{"b":null,"a":1}',
      '"quoted"',
      "caf\u00e9 \ud83d\ude00 \u0000\n",
    ];
    // Mulberry32: the generator above repeats its low bits too soon to put
    // two digit keys in one small object.
    let state = 11;
    const draw = (n: number) => {
      state = (state + 0x6d2b79f5) | 0;
      let x = Math.imul(state ^ (state >>> 15), state | 1);
      x ^= x + Math.imul(x ^ (x >>> 7), x | 61);
      return ((x ^ (x >>> 14)) >>> 0) % n;
    };
    let flat = 0;
    for (let i = 0; i < 2000; i++) {
      const object: Record<string, unknown> = {};
      for (let k = draw(6); k > 0; k--) {
        const drawn = draw(12);
        object[FLAT_KEYS[draw(FLAT_KEYS.length)]!] = drawn === 0
          ? null
          : drawn === 1
          ? draw(3) // a number: the message is no longer flat
          : STRINGS[draw(STRINGS.length)];
      }
      // Through JSON, so that a "__proto__" key is an own property.
      const parsed = JSON.parse(JSON.stringify(object));
      if (draw(4) === 0) parsed.type = "function_call";
      const values = Object.values(parsed);
      if (
        values.every((value) => value === null || typeof value === "string")
      ) {
        flat++;
      }
      strictEqual(
        canonicalMessage(parsed),
        canonicalMessageGeneral(parsed),
        JSON.stringify(parsed),
      );
    }
    // Most samples are flat: the direct path is what they exercise.
    strictEqual(flat > 1000, true, `only ${flat} flat samples`);
  });
  await t.step("on values only the general path takes", () => {
    const odd = [
      JSON.parse('{"role":"user","__proto__":{"x":null},"content":"a"}'),
      { role: "user", content: "a", 1: "index key" },
      { role: "user", content: [1n as unknown] },
      { role: "user", content: { toString: () => "x" }, date: new Date(0) },
      { role: "user", content: [undefined, () => 1], skipped: undefined },
      undefined,
      () => 1,
    ];
    for (const sample of odd) {
      strictEqual(canonicalMessage(sample), canonicalMessageGeneral(sample));
    }
  });
});
