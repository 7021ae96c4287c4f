// Covers: packages/engine/src/model/segments.ts, packages/engine/src/model/prefix.ts, packages/engine/src/model/line_chunks.ts
// Incremental counting is exact: for random conversations grown message by
// message and rendered by each family's real chat template, with the context
// LocalBackend builds, the sum of the cached piece counts equals a full
// tokenization of the render, every time.
import { ok, strictEqual } from "node:assert/strict";
import {
  isSegmentationSafe,
  splitAtAddedTokens,
} from "../../../packages/engine/src/model/segments.ts";
import { PrefixCounter } from "../../../packages/engine/src/model/prefix.ts";
import { isLineChunkSafe } from "../../../packages/engine/src/model/line_chunks.ts";
import {
  compileChatTemplate,
  TemplateRaisedError,
} from "../../../packages/engine/src/jinja/chat_template.ts";
import {
  detectContentFormat,
  templateContext,
} from "../../../packages/engine/src/vllm/preprocess.ts";
import { loadTokenizer } from "../../../packages/engine/src/tokenizer/tokenizer.ts";
import { buildTokenizePayload } from "../../../packages/engine/src/vllm/payload.ts";
import { MODEL_FILES } from "../../_kit/model_files.ts";
import { mulberry32 } from "../../_kit/prng.ts";
import {
  type Message,
  nextTurn,
  text,
  TOOLS,
} from "../../_kit/random_conversations.ts";

const SEED = 20261130;
const CONVERSATIONS = 8;
const TURNS = 12;

/** `text` cut at random places into parts, some empty. */
function cutAtRandom(text: string, random: () => number): string[] {
  const parts: string[] = [];
  let at = 0;
  while (at < text.length) {
    const next = Math.min(
      text.length,
      at + Math.floor(random() * random() * 400),
    );
    parts.push(text.slice(at, next));
    at = next;
  }
  if (random() < 0.3) parts.splice(Math.floor(random() * parts.length), 0, "");
  return parts;
}

Deno.test("counting by pieces equals a full count of every render, per safe family", async (t) => {
  for (const model of MODEL_FILES) {
    const tokenizerJson = await Deno.readTextFile(model.tokenizerPath);
    const safe = isSegmentationSafe(JSON.parse(tokenizerJson));
    const lineChunks = isLineChunkSafe(JSON.parse(tokenizerJson));
    const source = model.config["chat_template"];
    if (!safe || typeof source !== "string") {
      console.log(`segments property: ${model.family}: not safe, skipped`);
      continue;
    }
    await t.step(model.family, () => {
      const tokenizer = loadTokenizer({
        tokenizerJson,
        tokenizerConfig: JSON.stringify(model.config),
      });
      const template = compileChatTemplate(source, {
        now: () => new Date("2026-03-07T15:04:05"),
      });
      const contentFormat = detectContentFormat(source);
      // Each render split afresh, its pieces counted through a shared store.
      let hits = 0;
      let misses = 0;
      const pieces = new Map<string, number>();
      const store = {
        get(key: string) {
          const count = pieces.get(key);
          if (count === undefined) misses++;
          else hits++;
          return count;
        },
        set: (key: string, count: number) => void pieces.set(key, count),
      };
      // Reuses the previous renders' prefixes, as the count worker does.
      const prefix = new PrefixCounter(tokenizer, "sha", new Map());
      // And cutting pieces into line chunks, where the tokenizer allows it.
      const lines = new PrefixCounter(tokenizer, "sha", new Map(), {
        lineChunks,
      });
      // And given each render in parts cut at random places.
      const parted = new PrefixCounter(tokenizer, "sha", new Map(), {
        lineChunks,
      });
      const random = mulberry32(SEED);
      let renders = 0;
      for (let c = 0; c < CONVERSATIONS; c++) {
        let tools = random() < 0.7;
        const messages: Message[] = random() < 0.6
          ? [{ role: "system", content: text(random, 4) }]
          : [];
        for (let turn = 0; turn < TURNS; turn++) {
          const added = nextTurn(random, tools, turn);
          messages.push(...added);
          const request = {
            messages,
            ...(tools ? { tools: TOOLS } : {}),
            add_generation_prompt: random() < 0.5,
          };
          const input = templateContext(buildTokenizePayload(request), {
            specialTokens: tokenizer.specialTokens,
            contentFormat,
          });
          let rendered: string;
          try {
            rendered = template.render(input.context);
          } catch (error) {
            // Gemma 3 rejects tool turns: grow this conversation without them.
            ok(error instanceof TemplateRaisedError, String(error));
            messages.splice(messages.length - added.length);
            tools = false;
            continue;
          }
          const full = tokenizer.count(rendered, { addSpecialTokens: false });
          strictEqual(
            new PrefixCounter(tokenizer, "sha", store).count(rendered),
            full,
            `${model.family}, conversation ${c}, turn ${turn}`,
          );
          strictEqual(
            prefix.count(rendered),
            full,
            `${model.family}, conversation ${c}, turn ${turn}, prefix reuse`,
          );
          strictEqual(
            lines.count(rendered),
            full,
            `${model.family}, conversation ${c}, turn ${turn}, line chunks`,
          );
          strictEqual(
            parted.count(cutAtRandom(rendered, random)),
            full,
            `${model.family}, conversation ${c}, turn ${turn}, in parts`,
          );
          renders++;
        }
      }
      console.log(
        `segments property: ${model.family}: ${renders} renders equal (line chunks: ${lineChunks}); ${hits} segments reused from the cache, ${misses} tokenized`,
      );
      ok(renders >= CONVERSATIONS * TURNS / 2);
      ok(hits > misses);
    });
  }
});

Deno.test("PrefixCounter splits an edited text as a fresh split does, wherever the edit falls", () => {
  // Tokens that prefix and overlap each other make the split depend on what
  // follows: "<a>" vs "<a>b", "b<c>" across an edit.
  const addedTokens = Object.freeze(["<a>b", "b<c>", "<a>", "<c>", "<<"]);
  const alphabet = ["<", "a", ">", "b", "c", " ", "<a>", "<c>", "x"];
  // Any deterministic count of a piece will do: its code units squared, mod 7, plus one.
  const tokenizer = {
    addedTokens,
    count: (piece: string) => (piece.length * piece.length) % 7 + 1,
  };
  const expected = (text: string) =>
    splitAtAddedTokens(text, addedTokens).reduce(
      (sum, piece) => sum + (piece.added ? 1 : tokenizer.count(piece.text)),
      0,
    );
  const random = mulberry32(SEED);
  const counter = new PrefixCounter(tokenizer, "sha", new Map());
  // The same texts in parts: a grown text shares its base's part objects
  // (as a render reusing loop items does), an edited one is cut afresh.
  const parted = new PrefixCounter(tokenizer, "sha", new Map());
  const partsOf = new Map<string, string[]>([["", []]]);
  const texts: string[] = [""];
  for (let i = 0; i < 3000; i++) {
    const base = texts[Math.floor(random() * texts.length)]!;
    const at = Math.floor(random() * (base.length + 1));
    const cut = Math.floor(random() * 3);
    let insert = "";
    for (let n = Math.floor(random() * 4); n > 0; n--) {
      insert += alphabet[Math.floor(random() * alphabet.length)];
    }
    const grown = random() < 0.5;
    const text = grown
      ? base + insert
      : base.slice(0, at) + insert + base.slice(at + cut);
    strictEqual(counter.count(text), expected(text), JSON.stringify(text));
    const parts = grown
      ? [...partsOf.get(base)!, insert]
      : cutAtRandom(text, random);
    strictEqual(parted.count(parts), expected(text), JSON.stringify(parts));
    partsOf.set(text, parts);
    texts.push(text);
    if (texts.length > 6) texts.shift();
  }
});
