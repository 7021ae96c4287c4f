// Covers: packages/engine/src/jinja/memo.ts, packages/engine/src/jinja/loop_runs.ts, packages/engine/src/jinja/loop_table.ts, packages/engine/src/jinja/never_raises.ts, packages/engine/src/model/chat_render.ts
// Loops that reuse item outputs between renders (packages/engine/src/jinja/memo.ts,
// and without a check of their own, loop_runs.ts) render exactly what a fresh
// render does: for the real templates of every family over random
// conversations that grow, get edited, regenerate and interleave; for
// templates written to break each rule the reuse relies on; and for random
// loop bodies over random context sequences. Each test also checks that
// outputs were reused, so that a reuse that never happens cannot pass.
import { localTokenizeBody } from "../../../src/backends/_shared/vllm_count.ts";
import { ok, strictEqual } from "node:assert/strict";
import { dirname } from "node:path";
import { getLogger } from "@logtape/logtape";
import {
  compileChatTemplate,
  listValue,
  toValue,
} from "../../../packages/engine/src/jinja/chat_template.ts";
import { memoStats } from "../../../packages/engine/src/jinja/memo.ts";
import {
  loadFolder,
  renderChat,
  renderChatParts,
  templateFor,
} from "../../../packages/engine/src/model/chat_render.ts";
import { MODEL_FILES } from "../../_kit/model_files.ts";
import { mulberry32, type Rand } from "../../_kit/prng.ts";
import {
  type Message,
  nextTurn,
  text,
  TOOLS,
} from "../../_kit/random_conversations.ts";

const SEED = 20261130;

/** The output, or the error's name and message: both renders must agree on either. */
function outcome(render: () => string): string {
  try {
    return render();
  } catch (error) {
    return `! ${(error as Error).name}: ${(error as Error).message}`;
  }
}

/** Hits, misses and hits without checks counted while `run` runs. */
function counted(
  run: () => void,
): { hits: number; misses: number; skips: number } {
  const { hits, misses, skips } = memoStats;
  run();
  return {
    hits: memoStats.hits - hits,
    misses: memoStats.misses - misses,
    skips: memoStats.skips - skips,
  };
}

Deno.test("real templates render alike with reused item outputs, over growing, edited and interleaved conversations", async (t) => {
  for (const model of MODEL_FILES) {
    await t.step(model.family, async () => {
      const loaded = await loadFolder(
        { dir: dirname(model.tokenizerPath) },
        getLogger(["incontext", "test"]),
      );
      const random = mulberry32(SEED);
      // The payload's message objects are kept between renders, as the count
      // core keeps them (one payload message per request message).
      const payloadOf = new WeakMap<Message, Record<string, unknown>>();
      const stable = (message: Message) => {
        let kept = payloadOf.get(message);
        if (kept === undefined) {
          const body = localTokenizeBody({ messages: [message] }, "chat");
          kept = (body.messages as Record<string, unknown>[])[0]!;
          payloadOf.set(message, kept);
        }
        return kept;
      };
      const conversations: { messages: Message[]; tools: boolean }[] = [
        {
          messages: [{ role: "system", content: text(random, 4) }],
          tools: true,
        },
        { messages: [], tools: false },
      ];
      let renders = 0;
      const stats = counted(() => {
        for (let step = 0; step < 60; step++) {
          const conversation = conversations[step % 2]!;
          const { messages } = conversation;
          const roll = random();
          if (roll < 0.1 && messages.length > 2) {
            // An edit in the middle: a new object with other content.
            const at = Math.floor(random() * messages.length);
            messages[at] = { ...messages[at]!, content: text(random, 3) };
          } else if (roll < 0.2 && messages.length > 3) {
            // Regenerate: the last turn goes.
            messages.splice(-2);
          } else {
            messages.push(...nextTurn(random, conversation.tools, step));
          }
          const kwargs = random() < 0.2
            ? { chat_template_kwargs: { enable_thinking: false } }
            : {};
          const body = localTokenizeBody({
            messages,
            ...(conversation.tools ? { tools: TOOLS } : {}),
            add_generation_prompt: random() < 0.7,
            ...kwargs,
          }, "chat");
          const payload: Record<string, unknown> = {
            ...body,
            messages: messages.map(stable),
          };
          const entry = templateFor(loaded, payload.tools);
          const plain = outcome(() =>
            renderChat(loaded, payload, { template: entry, reuse: false })
          );
          const memo = outcome(() =>
            renderChatParts(loaded, payload, { template: entry, reuse: true })
              .join("")
          );
          strictEqual(memo, plain, `${model.family}, step ${step}`);
          if (plain.startsWith("! ")) {
            // Gemma 3 rejects tool turns: this conversation goes on without.
            conversation.tools = false;
            messages.splice(0, messages.length);
          }
          renders++;
        }
      });
      console.log(
        `template memo: ${model.family}: ${renders} renders alike; ${stats.hits} item outputs reused (${stats.skips} without a check of their own), ${stats.misses} rendered`,
      );
      ok(stats.hits > stats.misses, `${model.family}: outputs were reused`);
      ok(
        stats.skips > stats.hits / 2,
        `${model.family}: most reused without checks`,
      );
    });
  }
});

/** Renders `source` over `contexts` with and without reuse; they must agree. */
function agree(
  source: string,
  contexts: readonly Record<string, unknown>[],
  clock: { now: Date } = { now: new Date(2026, 10, 30, 12, 0, 0) },
): { hits: number; misses: number; skips: number } {
  const template = compileChatTemplate(source, { now: () => clock.now });
  const total = { hits: 0, misses: 0, skips: 0 };
  contexts.forEach((context, i) => {
    const plain = outcome(() => template.render(context));
    let memo = "";
    // Counted over the first render of each context only: the second,
    // of the same context, reuses every item.
    const stats = counted(() => {
      memo = outcome(() =>
        template.renderParts(context, { memo: true }).join("")
      );
    });
    total.hits += stats.hits;
    total.misses += stats.misses;
    total.skips += stats.skips;
    strictEqual(memo, plain, `render ${i} of ${source}`);
    strictEqual(
      outcome(() => template.render(context, { memo: true })),
      plain,
      `render ${i} of ${source}, whole`,
    );
  });
  return total;
}

/** Items converted once and shared between contexts, as the count core keeps messages. */
function items(...contents: string[]) {
  return contents.map((c) => toValue({ c }));
}

Deno.test("reused item outputs follow every value the body reads", async (t) => {
  const [a, b, c, d] = items("a", "b", "c", "d");
  const grown = [[a], [a, b], [a, b, c], [a, b, c, d]].map((messages) => ({
    messages,
  }));
  await t.step("loop fields: index, last, length, revindex, previtem", () => {
    const stats = agree(
      "{% for m in messages %}{{ loop.index }}{{ m.c }}{% if loop.last %}L{% endif %};{% endfor %}",
      grown,
    );
    ok(stats.hits > 0);
    agree(
      "{% for m in messages %}{{ loop.length }}{{ loop.revindex }}{{ loop.previtem.c if loop.previtem is defined }}{% endfor %}",
      [...grown, { messages: [b, a, c] }, { messages: [c, a] }],
    );
  });
  await t.step("a namespace carried from item to item", () => {
    const stats = agree(
      "{% set ns = namespace(n=0) %}{% for m in messages %}{% set ns.n = ns.n + m.c|length %}{{ ns.n }}{% endfor %}|{{ ns.n }}",
      [...grown, { messages: [toValue({ c: "long" }), a, b] }, ...grown],
    );
    ok(stats.hits > 0);
  });
  await t.step(
    "a namespace written before it is read, in the same item",
    () => {
      agree(
        "{% set ns = namespace(s='') %}{% for m in messages %}{% set ns.s = ns.s ~ m.c %}{{ ns.s }}/{% endfor %}",
        [...grown, { messages: [b, c] }],
      );
    },
  );
  await t.step("a namespace written by a macro the item calls", () => {
    agree(
      "{% set ns = namespace(n=0) %}{% macro bump() %}{% set ns.n = ns.n + 1 %}{{ ns.n }}{% endmacro %}{% for m in messages %}{{ m.c }}{{ bump() }}{% endfor %}{{ ns.n }}",
      [...grown, { messages: [c, b, a] }],
    );
  });
  await t.step(
    "a macro's write during an expression is never re-run to check it",
    () => {
      // Checking a kept item must not call bump() again: after a failed check
      // the item would run with the namespace bumped twice.
      agree(
        "{% set ns = namespace(n=0) %}{% macro bump() %}{% set ns.n = ns.n + 1 %}{{ x }}{% endmacro %}{% for m in messages %}{{ bump() }}{{ y }}{{ ns.n }};{% endfor %}",
        [
          { messages: [a, b], x: "1", y: "1" },
          { messages: [a, b], x: "1", y: "2" },
          { messages: [a, b, c], x: "1", y: "2" },
        ],
      );
    },
  );
  await t.step(
    "a check never takes a path the item's own variables decide",
    () => {
      // Checked before the item runs, `flag or v == 'x'` would read the
      // previous item's `v`; the item reads its own.
      const [p, q] = [toValue({ c: "y" }), toValue({ c: "x" })];
      agree(
        "{% for m in messages %}{% set v = m.c %}{% if flag or v == 'x' %}A{% else %}B{% endif %}{% endfor %}",
        [{ messages: [p], flag: true }, { messages: [q, p], flag: false }],
      );
      // The same through a macro that reads the item's variable.
      agree(
        "{% macro pick() %}{% if flag %}A{% else %}{{ v }}{% endif %}{% endmacro %}{% for m in messages %}{% set v = m.c %}{{ pick() }}{% endfor %}",
        [{ messages: [p], flag: true }, { messages: [q, p], flag: false }],
      );
      // And through a nested loop's variable.
      agree(
        "{% for m in messages %}{% for t in [m.c] %}{% if flag or t == 'x' %}A{% else %}B{% endif %}{% endfor %}{% endfor %}",
        [{ messages: [p], flag: true }, { messages: [q, p], flag: false }],
      );
    },
  );
  await t.step("values read through the body's own variables", () => {
    const [p, q] = [
      toValue({ c: "p", key: "a" }),
      toValue({ c: "q", key: "b" }),
    ];
    // A context mapping read with a key the body computed.
    agree(
      "{% for m in messages %}{% set k = m.key %}{{ cfg[k] }}{% endfor %}",
      [
        { messages: [p, q], cfg: { a: 1, b: 2 } },
        { messages: [p, q], cfg: { a: 5, b: 2 } },
      ],
    );
    // A namespace read with such a key.
    agree(
      "{% set ns = namespace(a=va, b=2) %}{% for m in messages %}{% set k = m.key %}{{ ns[k] }}{% endfor %}",
      [{ messages: [p, q], va: 1 }, { messages: [p, q], va: 7 }],
    );
    // A list of the context whose items change, not its length.
    agree(
      "{% for m in messages %}{% set t = tags %}{{ t | join(',') }}{{ m.c }}{% endfor %}",
      [
        { messages: [p, q], tags: ["x", "y"] },
        { messages: [p, q], tags: ["x", "z"] },
      ],
    );
  });
  await t.step(
    "a namespace stored by one render is not replayed into the next",
    () => {
      agree(
        "{% set ns = namespace(n=0) %}{% for m in messages %}{% if keep is defined %}{{ keep.n }}{% endif %}{% set ns.n = ns.n + 1 %}{% set keep = ns %}{% endfor %}{% set ns.n = 100 %}",
        [{ messages: [a] }, { messages: [a, b] }, { messages: [a, b, c] }],
      );
    },
  );
  await t.step("a variable set in one item and read in the next", () => {
    agree(
      "{% for m in messages %}{{ last }}>{% set last = m.c %}{{ last }};{% endfor %}",
      [...grown, { messages: [d, a] }, { messages: [a, d] }],
    );
  });
  await t.step("variables of the context that change between renders", () => {
    const stats = agree(
      "{% for m in messages %}{{ sep }}{{ m.c }}{% if flag %}!{% endif %}{% endfor %}",
      [
        { messages: [a, b], sep: "-", flag: false },
        { messages: [a, b, c], sep: "-", flag: false },
        { messages: [a, b, c], sep: "+", flag: false },
        { messages: [a, b, c], sep: "+", flag: true },
        { messages: [a, b, c], sep: 1, flag: true },
        { messages: [a, b, c], sep: 1.0, flag: 1 },
      ],
    );
    ok(stats.hits > 0);
  });
  await t.step(
    "macros read the names where they are defined, and may be redefined",
    () => {
      agree(
        "{% if alt %}{% macro show(m) %}[{{ sep }}{{ m.c }}]{% endmacro %}{% else %}{% macro show(m) %}({{ sep }}{{ m.c }}){% endmacro %}{% endif %}{% for m in messages %}{{ show(m) }}{% endfor %}",
        [
          { messages: [a, b], sep: "-", alt: false },
          { messages: [a, b, c], sep: "-", alt: false },
          { messages: [a, b, c], sep: "=", alt: false },
          { messages: [a, b, c], sep: "=", alt: true },
        ],
      );
    },
  );
  await t.step(
    "a macro defined outside the loop, reading its arguments and globals only, keeps items reused",
    () => {
      const stats = agree(
        "{% macro show(m, i) %}[{{ i }}{{ m.c | upper }}{{ range(2) | list }}]{% endmacro %}{% for m in messages %}{{ show(m, loop.index) }}{% endfor %}",
        grown,
      );
      ok(stats.hits > 0);
    },
  );
  await t.step(
    "a macro reading a name it closes over sees the name where it was defined, never the item's",
    () => {
      // jinja2 renders `1` for each item: the macro's `a` is the top-level one.
      const stats = agree(
        "{% set a = top %}{% macro m() %}{{ a }}{% endmacro %}{% for x in messages %}{% set a = x.c %}{{ m() }}{% endfor %}",
        [
          { messages: [a, b], top: 1 },
          { messages: [a, b, c], top: 1 },
          { messages: [a, b, c], top: 2 },
        ],
      );
      strictEqual(
        compileChatTemplate(
          "{% set a = top %}{% macro m() %}{{ a }}{% endmacro %}{% for x in messages %}{% set a = x.c %}{{ m() }}{% endfor %}",
        ).render({ messages: [a, b], top: 1 }, { memo: true }),
        "11",
      );
      strictEqual(stats.hits, 0);
    },
  );
  await t.step("the clock is read again", () => {
    const clock = { now: new Date(2026, 10, 30, 12, 0, 0) };
    const template = compileChatTemplate(
      "{% for m in messages %}{{ strftime_now('%H:%M:%S') }} {{ m.c }};{% endfor %}",
      { now: () => clock.now },
    );
    const first = template.render({ messages: [a, b] }, { memo: true });
    clock.now = new Date(2026, 10, 30, 12, 0, 1);
    const second = template.render({ messages: [a, b] }, { memo: true });
    strictEqual(second, template.render({ messages: [a, b] }));
    ok(first !== second);
    // Called with the item's own format: the call cannot be checked again
    // alone, so the item is never reused.
    const own = compileChatTemplate(
      "{% for m in messages %}{% set f = '%S' %}{{ strftime_now(f) }}{{ m.c }};{% endfor %}",
      { now: () => clock.now },
    );
    own.render({ messages: [a, b] }, { memo: true });
    clock.now = new Date(2026, 10, 30, 12, 0, 2);
    strictEqual(
      own.render({ messages: [a, b] }, { memo: true }),
      own.render({ messages: [a, b] }),
    );
  });
  await t.step("a global shadowed in a later render", () => {
    agree(
      "{% if shadow %}{% set range = none %}{% set raise_exception = 'x' %}{% endif %}{% for m in messages %}{{ range is none }}{{ raise_exception is string }}{{ m.c }}{% endfor %}",
      [
        { messages: [a, b], shadow: false },
        { messages: [a, b], shadow: true },
        { messages: [a, b], shadow: false },
      ],
    );
  });
  await t.step(
    "the loop variable reassigned, messages read around the item",
    () => {
      agree(
        "{% for m in messages %}{% if loop.index0 > 0 %}{{ messages[loop.index0 - 1].c }}{% endif %}{% set m = messages[-1] %}{{ m.c }};{% endfor %}",
        [...grown, { messages: [a, c, d] }],
      );
    },
  );
  await t.step("break, continue, else, filtered and nested loops", () => {
    const stop = toValue({ c: "stop", stop: true });
    const skip = toValue({ c: "skip", skip: true, tags: ["x", "y"] });
    agree(
      "{% for m in messages if not m.skip %}{% if m.stop %}{% break %}{% endif %}{{ m.c }}{% for t in m.tags or [] %}{{ t }}{{ loop.index }}{% endfor %}{% else %}empty{% endfor %}" +
        "{% for m in messages %}{% if m.skip %}{% continue %}{% endif %}{{ m.c }}{% endfor %}",
      [
        { messages: [a, skip, b] },
        { messages: [a, skip, b, stop, c] },
        { messages: [] },
        { messages: [skip] },
        { messages: [a, skip, b, c] },
      ],
    );
  });
  await t.step(
    "a namespace or loop used whole, or stored, is never reused stale",
    () => {
      agree(
        "{% set ns = namespace(n=0, l=none) %}{% for m in messages %}{% set ns.n = ns.n + 1 %}{{ ns.items() | list | length }}{% set ns.l = loop.index %}{% set keep = ns %}{{ keep.n }}{% endfor %}{{ ns.l }}",
        [...grown, { messages: [d, c] }],
      );
    },
  );
  await t.step("the same item twice in one list", () => {
    agree(
      "{% for m in messages %}{{ loop.index }}{{ m.c }}{% endfor %}",
      [{ messages: [a, a] }, { messages: [a, a, a] }, { messages: [b, a, a] }],
    );
  });
});

/** Contexts of one list growing item by item, then edited and cut. */
function growing(n: number, extra: Record<string, unknown> = {}) {
  const pool = Array.from({ length: n }, (_, i) => toValue({ c: `m${i}` }));
  const contexts = pool.map((_, i) => ({
    messages: pool.slice(0, i + 1),
    ...extra,
  }));
  const edited = [...pool];
  edited[Math.floor(n / 2)] = toValue({ c: "edited" });
  return [...contexts, { messages: edited, ...extra }, {
    messages: pool.slice(0, n - 2),
    ...extra,
  }];
}

Deno.test("a grown list reuses the items it shares with the previous render without checking them one by one", async (t) => {
  await t.step("a loop over the list, and over it reversed", () => {
    // The fields of an item's place that stay as the list grows (counted
    // from the start over the list, from the end over it reversed) are
    // read without checks; the others are checked.
    const stay = {
      "messages": "{% if loop.first %}F{% endif %}{{ loop.index0 }}",
      "messages[::-1]": "{% if loop.last %}L{% endif %}{{ loop.revindex }}",
    };
    for (const [list, fields] of Object.entries(stay)) {
      agree(
        `{% for m in ${list} %}{{ m.c }}{% if loop.first %}F{% endif %}{% if loop.last %}L{% endif %}{{ loop.revindex }}{{ loop.index0 }};{% endfor %}`,
        growing(12),
      );
      const stats = agree(
        `{% for m in ${list} %}{{ m.c }}${fields};{% endfor %}`,
        growing(12),
      );
      ok(stats.skips > 55, `${list}: ${stats.skips} without checks`);
    }
  });
  await t.step("a first item that changes every render", () => {
    // A system prompt holding the time: the items after it still line up.
    const pool = Array.from({ length: 12 }, (_, i) => toValue({ c: `m${i}` }));
    const stay = {
      "messages":
        "{{ loop.index }}{% if loop.first %}F{% endif %}{{ loop.previtem.c if loop.previtem is defined }}",
      "messages[::-1]":
        "{{ loop.revindex }}{% if loop.last %}L{% endif %}{{ loop.nextitem.c if loop.nextitem is defined }}",
    };
    for (const [list, fields] of Object.entries(stay)) {
      const stats = agree(
        `{% for m in ${list} %}{{ m.c }}${fields};{% endfor %}`,
        pool.map((_, i) => ({
          messages: [toValue({ c: `system ${i}` }), ...pool.slice(0, i)],
        })),
      );
      ok(stats.skips > 28, `${list}: ${stats.skips} without checks`);
    }
  });
  await t.step("the list read at the items around the current one", () => {
    const stats = agree(
      // At the first item, `messages[-1]` is the last; two items before an
      // edit, `messages[loop.index0 + 2]` is the edited one.
      "{% for m in messages %}{% if loop.first or messages[loop.index0 - 1].c != 'm3' %}<{% endif %}{{ messages[loop.index0 - 1].c }}{{ m.c }}{% if loop.last or messages[loop.index0 + 1].c == 'edited' %}>{% endif %}{{ messages[loop.index0 + 2].c if messages[loop.index0 + 2] is defined }}{{ messages[loop.index0 + 6].c if messages[loop.index0 + 6] is defined }}|{% endfor %}",
      growing(12),
    );
    ok(stats.skips > 32);
  });
  await t.step(
    "an index compared with a value that moves between renders",
    () => {
      // The last user line moves as the list grows: only the items between
      // its old and new index read another answer.
      const pool = Array.from(
        { length: 14 },
        (_, i) => toValue({ c: `m${i}`, user: i % 3 === 0 }),
      );
      const stats = agree(
        "{% set ns = namespace(last=-1) %}{% for m in messages[::-1] %}{% set at = messages|length - 1 - loop.index0 %}{% if ns.last < 0 and m.user %}{% set ns.last = at %}{% endif %}{% endfor %}{% for m in messages %}{% if loop.index0 > ns.last %}+{% elif loop.index0 == ns.last %}={% else %}-{% endif %}{{ m.c }}{% if limit >= loop.index %}!{% endif %}{% endfor %}",
        pool.map((_, i) => ({ messages: pool.slice(0, i + 1), limit: i % 4 })),
      );
      ok(stats.skips > 40, `${stats.skips} without checks`);
    },
  );
  await t.step(
    "a value set and never read is not checked, unless reading it could raise",
    () => {
      const unread = agree(
        "{% for m in messages[::-1] %}{% set at = messages|length - loop.index0 %}{% if m.c == 'm2' %}{{ at }}{% endif %}{{ m.c }}{% endfor %}",
        growing(10),
      );
      ok(unread.skips > 20);
      // A value whose making wrote a namespace: what it read is kept.
      agree(
        "{% set ns = namespace(n=0) %}{% for m in messages %}{% set unused %}{% set ns.n = ns.n + k %}{% endset %}{{ m.c }}{% endfor %}{{ ns.n }}",
        growing(5).map((context, i) => ({ ...context, k: i % 3 })),
      );
      // Integer division by zero at the third item from the end: an item
      // reused from a render where it was not that item must not hide it.
      for (const use of ["", "{% if m.c == 'm0' %}{{ r }}{% endif %}"]) {
        agree(
          `{% for m in messages %}{% set r = 10 // (loop.revindex0 - 2) %}${use}{{ m.c }}{% endfor %}`,
          growing(6),
        );
      }
    },
  );
  await t.step("a namespace written where the previous render did not", () => {
    // The item that counts follows `pick`: after it, `ns.n` differs from
    // the previous render's, so every later item reads it again.
    const pool = Array.from({ length: 8 }, (_, i) => toValue({ c: `m${i}` }));
    const stats = agree(
      "{% set ns = namespace(n=0) %}{% for m in messages %}{% if m.c == pick %}{% set ns.n = ns.n + 1 %}{% endif %}{{ ns.n }}{{ m.c }}{% endfor %}",
      pool.map((_, i) => ({
        messages: pool.slice(0, i + 1),
        pick: i % 2 === 0 ? "m1" : "none",
      })),
    );
    ok(stats.skips > 5);
  });
  await t.step("a namespace written through another name", () => {
    agree(
      "{% set ns = namespace(n=0) %}{% set alias = ns %}{% for m in messages %}{% if m.c == 'm1' or m.c == 'edited' %}{% set alias.n = alias.n + 1 %}{% endif %}{{ ns.n }}{{ m.c }}{% endfor %}",
      growing(8),
    );
  });
  await t.step("long lists, whose blocks of items are reused at once", () => {
    // Some items read a value that changes between renders, one moves
    // a namespace key, and an index is compared with a key that moves:
    // each block holding such an item is read item by item.
    const pool = Array.from({ length: 400 }, (_, i) =>
      toValue({
        c: `m${i}`,
        user: i % 97 === 0,
        watch: i % 151 === 0,
        bump: i % 233 === 0,
      }));
    // 192 and 256: a list ending where a block does.
    const contexts = [120, 192, 256, 260, 263, 300, 399].flatMap((n, k) => [
      { messages: pool.slice(0, n), x: k % 2 },
      { messages: pool.slice(0, n + 1), x: k % 2 },
    ]);
    const edited = pool.slice(0, 399);
    edited[200] = toValue({ c: "edited", user: true });
    contexts.push({ messages: edited, x: 0 });
    const stats = agree(
      "{% set ns = namespace(last=-1, n=0) %}{% for m in messages[::-1] %}{% if ns.last < 0 and m.user %}{% set ns.last = messages|length - 1 - loop.index0 %}{% endif %}{% endfor %}" +
        "{% for m in messages %}{% if loop.index0 > ns.last %}+{% endif %}{% if m.watch %}{{ x }}{% endif %}{% if m.bump %}{% set ns.n = ns.n + x + 1 %}{% endif %}{{ ns.n }}{% if messages[loop.index0 + 1] is defined and messages[loop.index0 + 1].c == 'edited' %}E{% endif %}{{ m.c }}{% if loop.last %}L{% endif %};{% endfor %}",
      contexts,
    );
    ok(stats.skips > 4500, `${stats.skips} without checks`);
    // A list that ended where a block does: its last item is last no more.
    agree(
      "{% for m in messages %}{{ m.c }}{% if loop.last %}L{% endif %};{% endfor %}",
      [192, 193, 256, 257].map((n) => ({ messages: pool.slice(0, n) })),
    ); // Blocks whose outputs are all empty, all filled, or some of each.
    const mixed = agree(
      "{% for m in messages %}{% if m.user or m.watch %}{{ m.c }};{% endif %}{% endfor %}" +
        "{% for m in messages[::-1] %}{% if loop.index0 < 70 or m.bump %}{{ m.c }};{% endif %}{% endfor %}",
      [130, 131, 260, 261, 262, 399, 400].map((n) => ({
        messages: pool.slice(0, n),
      })),
    );
    ok(mixed.skips > 2200, `${mixed.skips} without checks`);
  });
  await t.step("blocks summed up again as their items come", () => {
    // The first items print nothing and read nothing that changes: a block
    // that held only such items, then more, must not be reused as it was.
    const pool = Array.from(
      { length: 300 },
      (_, i) =>
        toValue({ c: `m${i}`, late: i >= 150, watch: i >= 150 && i % 7 === 0 }),
    );
    for (const list of ["messages", "messages[::-1]"]) {
      const stats = agree(
        `{% for m in ${list} %}{% if m.late %}{{ m.c }}{% if m.watch %}{{ x }}{% endif %};{% endif %}{% endfor %}`,
        Array.from({ length: 200 }, (_, k) => ({
          messages: pool.slice(0, 101 + k),
          x: k % 3,
        })),
      );
      ok(stats.skips > 15000, `${list}: ${stats.skips} without checks`);
    }
  });
  await t.step(
    "a render that raises leaves the previous render's items as they were",
    () => {
      // The raising render takes the previous render's items over and runs
      // the last one again, no longer last: the next render of the same list
      // still finds it last.
      const pool = Array.from(
        { length: 200 },
        (_, i) => toValue({ c: `m${i}` }),
      );
      const bad = toValue({ c: "bad" });
      const stats = agree(
        "{% for m in messages %}{% if m.c == 'bad' %}{{ raise_exception('bad item') }}{% endif %}{{ m.c }}{% if loop.last %}L{% endif %};{% endfor %}",
        [
          { messages: pool },
          { messages: [...pool, bad] },
          { messages: pool },
          { messages: [...pool, toValue({ c: "next" })] },
        ],
      );
      ok(stats.skips > 480, `${stats.skips} without checks`);
    },
  );
  await t.step("a loop run within an item of the same loop", () => {
    // A macro calling itself: the inner run lines up with the run the outer
    // one took, and reads its table while the outer one runs; one breaks
    // off, and the table it read stays read.
    const [a, b, c, d] = Array.from(
      { length: 4 },
      (_, i) => toValue({ c: `o${i}` }),
    );
    const x = listValue([a, b, c]);
    const y = listValue([a, b, c, d]);
    const trees = [
      [a, b, c],
      [a, b, c, x],
      [a, b, c, x],
      [a, b, c],
      [a, b, c, y],
      [a, b, c, x, y],
      [x],
      [a, b],
      [a, b, c, x],
    ];
    for (const stop of ["", "{% if c.c == 'o3' %}{% break %}{% endif %}"]) {
      const stats = agree(
        `{% macro walk(node) %}{% for c in node %}${stop}{% if c is mapping %}{{ c.c }}{{ loop.index }}{% if loop.last %}L{% endif %};{% else %}[{{ walk(c) }}]{% endif %}{% endfor %}{% endmacro %}{{ walk(tree) }}`,
        [...trees, ...trees, ...trees].map((tree) => ({ tree })),
      );
      ok(stats.skips > 20, `${stats.skips} without checks`);
    }
  });
  await t.step("loops run within items of the same loop, at random", () => {
    const source =
      "{% macro walk(node) %}{% for c in node %}{% if c is mapping %}{{ c.c }}{{ loop.index }}{% if loop.last %}L{% endif %}{% if loop.first %}F{% endif %};{% else %}[{{ walk(c) }}]{% endif %}{% endfor %}{% endmacro %}{{ walk(tree) }}";
    let skips = 0;
    for (let seed = 1; seed <= 40; seed++) {
      const random = mulberry32(seed);
      const objects = Array.from(
        { length: 5 },
        (_, i) => toValue({ c: `o${i}` }),
      );
      const lists = Array.from(
        { length: 4 },
        () => listValue(objects.slice(0, 1 + Math.floor(random() * 5))),
      );
      const pool: unknown[] = [...objects, ...lists];
      const contexts = Array.from({ length: 30 }, () => {
        const n = 1 + Math.floor(random() * 6);
        const tree: unknown[] = random() < 0.5
          ? [
            ...objects.slice(0, Math.min(5, n)),
            ...(n > 5 ? [lists[Math.floor(random() * 4)]] : []),
          ]
          : Array.from(
            { length: n },
            () => pool[Math.floor(random() * pool.length)],
          );
        return { tree };
      });
      skips += agree(source, contexts).skips;
    }
    ok(skips > 1000, `${skips} without checks`);
  });
  await t.step("conversations interleaved, each growing", () => {
    // Both start with the same system message: neither run displaces the
    // other's.
    const system = toValue({ c: "system" });
    const [a, b] = [growing(10), growing(10)].map((contexts) =>
      contexts.map((context) => ({
        messages: [system, ...context.messages as unknown[]],
      }))
    );
    // Over the list reversed, the shared items end both runs: the index
    // from the end is the same.
    for (
      const [list, field] of [["messages", "index"], [
        "messages[::-1]",
        "revindex",
      ]]
    ) {
      const stats = agree(
        `{% for m in ${list} %}{{ loop.${field} }}{{ m.c }}{% endfor %}`,
        a!.flatMap((context, i) => [context, b![i]!]),
      );
      // Half of them by the second render of each context, the same list.
      ok(stats.skips > 90, `${list}: ${stats.skips} without checks`);
    }
  });
});

// Random loop bodies made of fragments that read, write and call what the
// memo must follow, rendered over random sequences of contexts.
const PRELUDE =
  "{% set ns = namespace(n=0, flag=false, s='') %}{% set alias = ns %}{% if shadow %}{% set sep = 'S' %}{% set range = none %}{% endif %}" +
  "{% macro show(m) %}{{ sep }}{{ m.c }}{% endmacro %}" +
  "{% macro bump(k) %}{% set ns.n = ns.n + k %}{{ ns.n }}{% endmacro %}" +
  "{% macro pick() %}{% if x == 'a' %}A{% else %}{{ last }}{% endif %}{% endmacro %}" +
  "{% macro wrap(v, i=0) %}[{{ v }}{{ i }}]{% endmacro %}";
const FRAGMENTS = [
  "{{ m.c }}",
  "{{ loop.index }}",
  "{% if loop.last %}L{% endif %}",
  "{% if loop.first %}F{% endif %}",
  "{{ loop.length }}",
  "{{ loop.revindex0 }}",
  "{% if loop.previtem is defined %}<{{ loop.previtem.c }}{% endif %}",
  "{% if loop.nextitem is defined %}>{{ loop.nextitem.c }}{% endif %}",
  "{% set ns.n = ns.n + 1 %}",
  "{{ ns.n }}",
  "{% if m.flag %}{% set ns.flag = not ns.flag %}{% endif %}",
  "{{ ns.flag }}",
  "{% set ns.s = ns.s ~ m.c %}",
  "{{ ns.s | length }}",
  "{{ x }}",
  "{% if x == 'b' %}B{% endif %}",
  "{% set last = m.c %}",
  "{% if last is defined %}{{ last }}{% endif %}",
  "{{ show(m) }}",
  "{{ bump(2) }}",
  "{{ strftime_now('%S') }}",
  "{% for k in m.tags %}{{ k }}{{ loop.index }}{{ ns.n }}{% endfor %}",
  "{{ messages | length }}",
  "{{ messages[loop.index0 - 1].c if loop.index0 > 0 else '' }}",
  "{% if m.stop %}{% break %}{% endif %}",
  "{% if m.skip %}{% continue %}{% endif %}",
  "{{ range is none }}",
  "{% if m.bad %}{{ raise_exception('bad item') }}{% endif %}",
  "{{ ns.items() | list | length }}",
  "{% if x == 'b' or last == 'a' %}O{% endif %}",
  "{% if last is defined and (ns.flag or last == 'b') %}P{% endif %}",
  "{{ pick() }}",
  "{{ wrap(m.c, loop.index) }}",
  "{% for k in m.tags %}{% if x == 'a' or k == 't' %}K{% endif %}{% endfor %}",
  "{% set at = messages|length - loop.index0 %}{% if m.flag %}{{ at }}{% endif %}",
  "{% if loop.index0 > ns.n %}G{% endif %}",
  "{% if lim >= loop.index %}!{% endif %}",
  "{{ messages[loop.index0 + 1].c if messages[loop.index0 + 1] is defined }}",
  "{% set q = 10 // (loop.revindex0 - 2) %}",
  "{% set alias.n = alias.n + 1 %}",
];

function randomItem(random: Rand, n: number) {
  return toValue({
    c: String.fromCharCode(97 + n % 26) + (n > 25 ? n : ""),
    flag: random() < 0.4,
    stop: random() < 0.05,
    skip: random() < 0.08,
    bad: random() < 0.03,
    tags: random() < 0.3
      ? ["t", "u"].slice(0, 1 + Math.floor(random() * 2))
      : [],
  });
}

Deno.test("random loop bodies render alike with reused item outputs over random contexts", () => {
  const random = mulberry32(SEED);
  let renders = 0;
  let hits = 0;
  let skips = 0;
  for (let t = 0; t < 250; t++) {
    const body = Array.from(
      { length: 1 + Math.floor(random() * 5) },
      () => FRAGMENTS[Math.floor(random() * FRAGMENTS.length)]!,
    ).join("");
    // A third of the loops run over the list reversed.
    const list = t % 3 === 2 ? "messages[::-1]" : "messages";
    const source =
      `${PRELUDE}{% for m in ${list} %}${body}|{% endfor %}#{{ ns.n }}{{ ns.flag }}{{ ns.s }}`;
    const pool = Array.from({ length: 8 }, (_, n) => randomItem(random, n));
    let messages = pool.slice(0, 1 + Math.floor(random() * 3));
    const contexts: Record<string, unknown>[] = [];
    let x = "a";
    let sep = "-";
    let shadow = false;
    for (let step = 0; step < 10; step++) {
      const roll = random();
      if (roll < 0.45) {
        messages = [...messages, pool[Math.floor(random() * pool.length)]!];
      } else if (roll < 0.55 && messages.length > 1) {
        messages = messages.slice(0, -1);
      } else if (roll < 0.65) {
        messages = messages.map((m) =>
          random() < 0.2 ? pool[Math.floor(random() * pool.length)]! : m
        );
      } else if (roll < 0.72) {
        x = x === "a" ? "b" : "a";
      } else if (roll < 0.79) {
        sep = sep === "-" ? "+" : "-";
      } else if (roll < 0.84) {
        shadow = !shadow;
      } else if (roll < 0.9) {
        messages = [randomItem(random, 30 + step), ...messages];
      }
      contexts.push({ messages, x, sep, shadow, lim: step % 4 });
    }
    const clock = { now: new Date(2026, 10, 30, 12, 0, 0) };
    const template = compileChatTemplate(source, { now: () => clock.now });
    const stats = counted(() => {
      contexts.forEach((context, i) => {
        if (random() < 0.2) {
          clock.now = new Date(clock.now.getTime() + 1000);
        }
        const plain = outcome(() => template.render(context));
        const memo = outcome(() =>
          random() < 0.5
            ? template.render(context, { memo: true })
            : template.renderParts(context, { memo: true }).join("")
        );
        strictEqual(memo, plain, `template ${t}, render ${i}: ${source}`);
        renders++;
      });
    });
    hits += stats.hits;
    skips += stats.skips;
  }
  console.log(
    `template memo: ${renders} random renders alike; ${hits} item outputs reused, ${skips} without a check of their own`,
  );
  ok(hits > renders);
  ok(skips > renders / 2);
});
