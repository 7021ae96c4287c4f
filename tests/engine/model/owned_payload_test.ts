// Covers: packages/engine/src/model/owned_payload.ts, packages/engine/src/model/models.ts, packages/engine/src/common/plain_copy.ts
// A host on the caller's thread renders unchanged messages from its own
// copies, reusing their template values and loop outputs, and counts
// exactly what a full render without reuse counts: on each family's real
// chat template, while conversations grow, interleave, and the caller edits
// its messages and tools in place between counts.
import { getLogger } from "@logtape/logtape";
import { dirname } from "node:path";
import { ok, strictEqual } from "node:assert/strict";
import { LocalModels } from "../../../packages/engine/src/model/models.ts";
import {
  loadFolder,
  renderPayload,
} from "../../../packages/engine/src/model/chat_render.ts";
import { OwnedPayloads } from "../../../packages/engine/src/model/owned_payload.ts";
import { PlainShapes } from "../../../packages/engine/src/common/plain_copy.ts";
import { memoStats } from "../../../packages/engine/src/jinja/memo.ts";
import { buildTokenizePayload } from "../../../packages/engine/src/vllm/payload.ts";
import { MODEL_FILES } from "../../_kit/model_files.ts";
import { mulberry32 } from "../../_kit/prng.ts";
import {
  type Message,
  nextTurn,
  text,
  TOOLS,
} from "../../_kit/random_conversations.ts";

const TURNS = 24;

/** The count of a full render without reuse, or the rejection's name. */
function fullCount(
  loaded: Awaited<ReturnType<typeof loadFolder>>,
  payload: Record<string, unknown>,
): number | string {
  try {
    const { parts } = renderPayload(loaded, payload, { split: false });
    return loaded.tokenizer.count(parts[0]!, { addSpecialTokens: false });
  } catch (error) {
    return (error as Error).name;
  }
}

Deno.test("LocalModels.count() on the caller's objects equals a full render while they grow, interleave and change in place", async (t) => {
  for (const files of MODEL_FILES) {
    await t.step(files.family, async () => {
      const spec = { dir: dirname(files.tokenizerPath) };
      const loaded = await loadFolder(spec, getLogger(["test"]));
      const host = new LocalModels({
        store: () => {},
        epoch: () => 0,
        pieces: new Map(),
      });
      const random = mulberry32(20261207);
      // Two conversations, each with tools of its own to edit.
      const conversations = [0, 1].map(() => ({
        messages: [{ role: "system", content: text(random, 3) }] as Message[],
        tools: structuredClone(TOOLS) as Record<string, unknown>[],
        calls: true,
      }));
      const hitsBefore = memoStats.hits;
      let counted = 0;
      for (let turn = 0; turn < TURNS; turn++) {
        const conversation = conversations[turn % 2]!;
        const { messages, tools } = conversation;
        const added = nextTurn(random, conversation.calls, turn);
        messages.push(...added);
        // The caller edits what it sent before, in place.
        if (turn % 5 === 4) {
          const earlier = messages[1 + Math.floor(random() * 3)]!;
          earlier.content = `${earlier.content ?? ""} (edited)`;
        }
        if (turn % 7 === 6) {
          const call = messages.find((m) => Array.isArray(m.tool_calls));
          const first = (call?.tool_calls as
            | { function: { arguments: string } }[]
            | undefined)?.[0];
          if (first !== undefined) {
            first.function.arguments = '{"city": "Oslo"}';
          }
        }
        if (turn % 9 === 8) {
          (tools[0]!.function as Record<string, unknown>).description =
            `edited at ${turn}`;
        }
        const payload = buildTokenizePayload({
          messages: [...messages],
          tools,
        });
        const expected = fullCount(loaded, payload);
        const got = await host.count({ spec, kind: "chat", payload }).then(
          (count) => count,
          (error: Error) => error.name,
        );
        strictEqual(got, expected, `${files.family}, turn ${turn}`);
        if (got === "RequestRejectedError") {
          // Gemma 3 rejects tool turns: this conversation goes on without them.
          messages.splice(messages.length - added.length);
          conversation.calls = false;
        }
        if (typeof got === "number") counted++;
      }
      ok(counted >= TURNS / 2, `${files.family}: ${counted} turns counted`);
      // The host rendered from its copies: loop items were reused.
      ok(memoStats.hits > hitsBefore, `${files.family}: no loop item reused`);
    });
  }
});

Deno.test("OwnedPayloads.adopt() keeps its copies of unchanged messages and copies changed ones afresh", () => {
  const owned = new OwnedPayloads();
  const a = { role: "user", content: "a" };
  const b = { role: "assistant", content: "b", tool_calls: [{ id: "1" }] };
  const first = owned.adopt({ messages: [a, b] })!;
  const firstMessages = first.messages as object[];
  ok(firstMessages[0] !== a && firstMessages[1] !== b);
  // Equal messages (other objects, as parsed from a new body) keep the copies.
  const second = owned.adopt({
    messages: [{ ...a }, structuredClone(b), { role: "user", content: "c" }],
  })!;
  const secondMessages = second.messages as object[];
  strictEqual(secondMessages[0], firstMessages[0]);
  strictEqual(secondMessages[1], firstMessages[1]);
  // A message changed in place is copied again; the earlier copy is untouched.
  b.tool_calls[0]!.id = "2";
  const third = owned.adopt({ messages: [a, b] })!;
  const thirdMessages = third.messages as Record<string, unknown>[];
  strictEqual(thirdMessages[0], firstMessages[0]);
  ok(thirdMessages[1] !== firstMessages[1]);
  strictEqual(
    (thirdMessages[1]!.tool_calls as { id: string }[])[0]!.id,
    "2",
  );
  strictEqual(
    ((firstMessages[1] as Record<string, unknown>).tool_calls as {
      id: string;
    }[])[0]!.id,
    "1",
  );
  // What is not plain data is not copied: the payload renders as given.
  strictEqual(owned.adopt({ messages: [{ role: "user", f() {} }] }), undefined);
  strictEqual(owned.adopt({ messages: [a], tools: {} }), undefined);
});

Deno.test("PlainShapes tells a value from the one its shape was taken of by keys, their order and values", () => {
  const message = {
    role: "tool",
    content: "x",
    meta: { a: 1, b: [1, { c: null }], z: -0 },
  };
  const shapes = new PlainShapes();
  ok(shapes.push({ role: "system", content: "first" }));
  ok(shapes.push(message));
  ok(shapes.push({ role: "user", content: "last" }));
  ok(shapes.equalsAt(1, message));
  ok(shapes.equalsAt(1, structuredClone(message)));
  const { role, content, meta } = message;
  const changed: [string, unknown][] = [
    ["keys reordered", { content, role, meta }],
    ["a key less", { role, content }],
    ["a key more", { ...message, extra: 1 }],
    ["nested keys reordered", { ...message, meta: { b: meta.b, a: 1, z: -0 } }],
    ["an item more", { ...message, meta: { ...meta, b: [1, { c: null }, 2] } }],
    ["an item less", { ...message, meta: { ...meta, b: [1] } }],
    ["another type", { ...message, meta: { ...meta, a: "1" } }],
    ["null for an object", { ...message, meta: { ...meta, b: [1, null] } }],
    ["an array for an object", { ...message, meta: [] }],
    ["0 for -0", { ...message, meta: { ...meta, z: 0 } }],
    [
      "a key of another prototype",
      Object.assign(Object.create({ role }), {
        content,
        meta,
      }),
    ],
    ["a Map", new Map(Object.entries(message))],
    ["the next value", { role: "user", content: "last" }],
  ];
  for (const [what, value] of changed) {
    ok(!shapes.equalsAt(1, value), what);
  }
  // A message edited in place after its shape was taken.
  message.meta.b.push(3);
  ok(!shapes.equalsAt(1, message));
  // What is not plain data adds nothing.
  ok(!shapes.push({ f() {} }));
  ok(!shapes.push([Symbol("s")]));
  strictEqual(shapes.length, 3);
  ok(shapes.equalsAt(2, { role: "user", content: "last" }));
  const first = shapes.slice(1);
  shapes.truncate(2);
  strictEqual(shapes.length, 2);
  strictEqual(first.length, 1);
  ok(first.equalsAt(0, { role: "system", content: "first" }));
  ok(first.push({ role: "user", content: "other" }));
  ok(!shapes.equalsAt(1, { role: "user", content: "other" }));
  // The first values two lists share, up to a limit.
  const system = { role: "system", content: "first" };
  strictEqual(shapes.sharedPrefix([system, message]), 1);
  // (`message` was edited in place after its shape was taken.)
  strictEqual(
    first.sharedPrefix([system, { role: "user", content: "other" }]),
    2,
  );
  strictEqual(
    first.sharedPrefix([system, { role: "user", content: "other" }], 1),
    1,
  );
  strictEqual(first.sharedPrefix([]), 0);
});
