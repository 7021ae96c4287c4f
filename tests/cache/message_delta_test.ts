// Covers: src/cache/message_delta.ts, src/cache/core.ts, src/backends/_shared/engine_client.ts
// A grown conversation crosses to the count worker as a delta: the client
// names the longest remembered prefix, the core rebuilds the whole list (or
// asks for it), and a count through the worker equals one on the calling
// thread however the caller grows, edits, interleaves or mutates its
// conversations.
import { deepStrictEqual, ok, rejects, strictEqual } from "node:assert/strict";
import { dirname } from "node:path";
import {
  type DeltaBase,
  ReceivedMessages,
  RECENT,
  SentMessages,
} from "../../src/cache/message_delta.ts";
import { CountCore } from "../../src/cache/core.ts";
import type { CacheResponse } from "../../src/cache/protocol.ts";
import { LocalBackend } from "../../src/backends/local/mod.ts";
import { CountError } from "../../src/core/errors.ts";
import { createCountCache } from "../../src/cache/mod.ts";
import { remoteEngine } from "../../src/backends/_shared/engine_client.ts";
import { localTokenizeBody } from "../../src/backends/_shared/vllm_count.ts";
import { MODEL_FILES } from "../_kit/model_files.ts";
import { mulberry32 } from "../_kit/prng.ts";

const C = { contextLength: 131072 };
const DIR = dirname(
  MODEL_FILES.find((files) => files.family === "qwen3")!.tokenizerPath,
);

const user = (content: string) => ({ role: "user", content });

Deno.test("SentMessages names the remembered list sharing the longest prefix", () => {
  const sent = new SentMessages();
  const a = [user("a"), user("b")];
  strictEqual(sent.record(1, a), undefined);
  deepStrictEqual(sent.record(2, [...a, user("c")]), { id: 1, keep: 2 });
  // Another conversation; then the first grows again: the longest wins.
  strictEqual(sent.record(3, [user("x")]), undefined);
  deepStrictEqual(sent.record(4, [...a, user("c"), user("d")]), {
    id: 2,
    keep: 3,
  });
  // An edit in the middle keeps what comes before it.
  deepStrictEqual(sent.record(5, [a[0], user("B"), user("c")]), {
    id: 4,
    keep: 1,
  });
});

Deno.test("SentMessages compares values, key order included, and never trusts a mutated object", () => {
  const sent = new SentMessages();
  const message = { role: "user", content: "a", meta: { x: [1, 2.5] } };
  sent.record(1, [message, user("z")]);
  // Equal by value in fresh objects (as parsed from a new request body).
  deepStrictEqual(
    sent.record(2, [
      { role: "user", content: "a", meta: { x: [1, 2.5] } },
      user("z"),
    ]),
    { id: 2 - 1, keep: 2 },
  );
  // Key order is part of the value: a template may iterate the keys.
  deepStrictEqual(
    sent.record(3, [{ content: "a", role: "user", meta: { x: [1, 2.5] } }]),
    undefined,
  );
  // The caller edits its object in place after the count: not equal to what was sent.
  message.meta.x.push(3);
  deepStrictEqual(sent.record(4, [message, user("z")]), undefined);
  // Values a structured clone would change are never equal.
  class Part {
    text = "a";
  }
  const odd = { role: "user", content: new Part() };
  sent.record(5, [odd]);
  strictEqual(sent.record(6, [odd]), undefined);
  const fn = { role: "user", content: "a", f: () => 1 };
  sent.record(7, [fn]);
  strictEqual(sent.record(8, [fn]), undefined);
  deepStrictEqual(sent.record(9, [0, -0, null, NaN]), undefined);
  deepStrictEqual(sent.record(10, [0, 0, null, NaN]), { id: 9, keep: 1 });
});

Deno.test("ReceivedMessages rebuilds what the client sent, through structured clones, on random edits", () => {
  const random = mulberry32(20261130);
  const sent = new SentMessages();
  const received = new ReceivedMessages();
  const conversations: Record<string, unknown>[][] = [[], [], []];
  let deltas = 0;
  for (let id = 0; id < 600; id++) {
    const c = Math.floor(random() * conversations.length);
    const list = conversations[c]!;
    const roll = random();
    if (roll < 0.6 || list.length === 0) {
      list.push(user(`m${id}`), { role: "assistant", content: `r${id}` });
    } else if (roll < 0.8) {
      list[Math.floor(random() * list.length)] = user(`edit${id}`);
    } else list.splice(Math.floor(random() * list.length));
    const base = sent.record(id, list);
    const tail = base === undefined ? list : list.slice(base.keep);
    if (base !== undefined) deltas++;
    const whole = received.resolve(id, structuredClone(tail), base);
    deepStrictEqual(whole, list, `request ${id}`);
  }
  ok(deltas > 300, `${deltas} deltas`);
});

Deno.test("ReceivedMessages refuses a base it does not remember", () => {
  const received = new ReceivedMessages();
  strictEqual(received.resolve(1, [user("a")], { id: 0, keep: 1 }), undefined);
  for (let id = 2; id < 2 + RECENT; id++) {
    received.resolve(id, [user("a")], undefined);
  }
  // The oldest of RECENT + 1 is forgotten; a base shorter than `keep` is refused.
  received.resolve(100, [user("a")], undefined);
  strictEqual(received.resolve(101, [], { id: 2, keep: 1 }), undefined);
  strictEqual(received.resolve(102, [], { id: 100, keep: 2 }), undefined);
  deepStrictEqual(received.resolve(103, [user("b")], { id: 100, keep: 1 }), [
    user("a"),
    user("b"),
  ]);
});

Deno.test("CountCore answers a delta on an unknown base with rebase", () => {
  const answers: CacheResponse[] = [];
  const session = new CountCore({ maxEntries: 8, maxKeyBytes: 1024 }).connect(
    (response) => answers.push(response),
  );
  const base: DeltaBase = { id: 41, keep: 1 };
  session.receive({
    type: "engine",
    id: 42,
    call: {
      op: "count",
      spec: { dir: DIR },
      kind: "chat",
      payload: { messages: [] },
    },
    base,
  });
  deepStrictEqual(answers, [{ type: "rebase", id: 42 }]);
  session.close();
});

Deno.test("LocalBackend through the worker counts as the calling thread while its conversations grow, change and interleave", async () => {
  await using cache = createCountCache();
  await using worker = new LocalBackend({ dir: DIR, cache });
  await using local = new LocalBackend({ dir: DIR, cache: null });
  const random = mulberry32(7);
  const conversations: Record<string, unknown>[][] = [[], []];
  for (let turn = 0; turn < 40; turn++) {
    const list = conversations[turn % 2]!;
    list.push(user(`question ${turn} ${random()}`));
    list.push({ role: "assistant", content: `answer ${turn}\nline two` });
    if (turn % 7 === 6) {
      // The caller edits an earlier message in place, same object.
      (list[1] as { content: string }).content += " (edited)";
    }
    const request = { messages: list };
    strictEqual(
      await worker.count(request, C),
      await local.count(request, C),
      `turn ${turn}`,
    );
  }
});

Deno.test("remoteEngine() recovers when the core lacks a delta's base", async () => {
  await using cache = createCountCache();
  const engine = remoteEngine(cache)!;
  await using local = new LocalBackend({ dir: DIR, cache: null });
  const spec = { dir: DIR };
  const first = [user("hello"), { role: "assistant", content: "hi" }];
  // A function cannot cross the port: this count fails before the core sees
  // these messages, though the client remembers sending them.
  await rejects(
    engine.count({
      spec,
      kind: "chat",
      payload: { messages: [...first, { role: "user", content: "x", f() {} }] },
    }),
    CountError,
  );
  // The next list extends that one: its delta names the lost base, the core
  // asks for the whole list, and the count is right.
  const request = { messages: [...first, user("x"), user("y")] };
  strictEqual(
    await engine.count({
      spec,
      kind: "chat",
      payload: localTokenizeBody(request, "chat"),
    }),
    await local.count(request, C),
  );
});
