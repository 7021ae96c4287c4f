/**
 * Local exact counting: a conversation grown by about 1,000 tokens a turn
 * to 128k tokens, counted each turn by LocalBackend (render, then
 * incremental counting over pieces between added tokens, reusing the
 * previous render's prefix, a grown conversation sent to the worker as a
 * delta) inside the count cache's worker (the default), again in a second
 * worker with each turn's request parsed from JSON text (fresh objects, as
 * the proxy and the fetch wrapper pass them), and on the calling thread
 * (`cache: null`), side by side, against a full
 * pure-JS re-tokenization (with loadTokenizer()'s BPE and ByteLevel speed-ups,
 * and with the library as shipped) and the native `tokenizers` binding (timed inside
 * its Node process) on the same renders, in the same run; then first-load
 * time and heap per model family, and pure-JS vs native tokens per second
 * on ~100 KB of fresh prose-like text (cold; the same text again; and, the
 * pure-JS tokenizers warmed up, other fresh text, as a long-lived worker
 * meets each turn's). The worker counts replay the grown
 * conversation's turns after the growth, each pass on its own, and the full
 * re-counts run after that on the renders of the turns near each
 * checkpoint: the harness's own work (the calling thread's counts, the
 * reference renders, JSON round trips, half-second re-counts) keeps V8's
 * background GC and compiler threads busy, which on 2 cores would land in
 * the timed counts of whatever runs beside it.
 *
 *     npx --yes deno@2.9.6 run --v8-flags=--expose-gc --allow-read --allow-env --allow-run=node --allow-write=/tmp bench/local_counting.ts
 *
 * `--load-only` prints only the first-load table; `--throughput-only` only the
 * tokens-per-second table; `--turns-only` skips the first-load and
 * tokens-per-second tables; `--family=qwen3` grows one family's conversation.
 */
import { dirname } from "node:path";
import { Tokenizer } from "@huggingface/tokenizers";
import { LocalBackend } from "../src/backends/local/mod.ts";
import { createCountCache } from "../src/cache/mod.ts";
import { compileChatTemplate } from "../packages/engine/src/jinja/chat_template.ts";
import {
  loadTokenizer,
  readModelFolder,
} from "../packages/engine/src/tokenizer/tokenizer.ts";
import { PrefixCounter } from "../packages/engine/src/model/prefix.ts";
import { isLineChunkSafe } from "../packages/engine/src/model/line_chunks.ts";
import { MODEL_FILES, type ModelFiles } from "../tests/_kit/model_files.ts";
import { ProseGenerator } from "./_local_bench_text.ts";
import { nativeEncodeTimes } from "./_local_bench_native.ts";
import type { LoadReport } from "./_local_bench_load_worker.ts";

const TURN_TOKENS = 1000;
const CHECKPOINTS = [32768, 65536, 131072];
/** Turns whose count lies within this of a checkpoint are its samples. */
const HALF_WINDOW = 8192;

const gc = (globalThis as { gc?: () => void }).gc;

function percentile(samples: readonly number[], p: number): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;
}

function family(name: string): ModelFiles {
  return MODEL_FILES.find((files) => files.family === name)!;
}

function ms(value: number): string {
  return `${value.toFixed(value < 10 ? 2 : 1)} ms`;
}

/** Load the files, build the tokenizer, compile the template. */
async function firstLoad(files: ModelFiles) {
  const folder = await readModelFolder(dirname(files.tokenizerPath));
  // Parsed once: the line-chunk check reads it before the tokenizer takes it.
  const json = JSON.parse(folder.tokenizerJson!);
  const lineChunks = isLineChunkSafe(json);
  const tokenizer = loadTokenizer({
    tokenizerJson: json,
    ...(folder.tokenizerConfig === undefined
      ? {}
      : { tokenizerConfig: folder.tokenizerConfig }),
  });
  const config = JSON.parse(folder.tokenizerConfig ?? "{}");
  const source = folder.chatTemplate ?? config.chat_template;
  const template = compileChatTemplate(
    typeof source === "string" ? source : source[0].template,
  );
  return { tokenizer, template, lineChunks };
}

/** Each family in a fresh Worker, so that its isolate holds only that load. */
async function loadTable(): Promise<string[]> {
  const rows = [
    "| family | first load (read + build tokenizer + compile template) | Worker heap before | Worker heap after | heap used |",
    "| --- | --- | --- | --- | --- |",
  ];
  for (const files of MODEL_FILES) {
    const worker = new Worker(
      new URL("./_local_bench_load_worker.ts", import.meta.url),
      { type: "module" },
    );
    const report = await new Promise<LoadReport>((resolve, reject) => {
      worker.onmessage = (event) => resolve(event.data);
      worker.onerror = reject;
      worker.postMessage(files.tokenizerPath);
    });
    worker.terminate();
    const mb = (bytes: number) => `${(bytes / 1048576).toFixed(1)} MB`;
    rows.push(
      `| ${files.family} | ${ms(report.ms)} | ${mb(report.heapBefore)} | ${
        mb(report.heapAfter)
      } | ${mb(report.heapAfter - report.heapBefore)} |`,
    );
  }
  return rows;
}

interface TurnSample {
  readonly tokens: number;
  /** The calling thread's count (the worker passes must agree). */
  readonly counted: number;
  readonly backendMs: number;
  /** Filled by the worker pass. */
  workerMs: number;
  /** The same in another worker, the request parsed from JSON text each turn (as the proxy and the fetch wrapper see it). */
  parsedMs: number;
  readonly renderMs: number;
  readonly tokenizeMs: number;
  /** Filled after the growth: the full pure-JS re-count of this turn's render. */
  fullMs: number;
  /** The full re-count by the library as shipped, without loadTokenizer()'s speed-ups. */
  stockMs: number;
  readonly render: string;
}

async function growConversation(files: ModelFiles): Promise<string[]> {
  const { tokenizer, template, lineChunks } = await firstLoad(files);
  const stock = new Tokenizer(
    JSON.parse(await Deno.readTextFile(files.tokenizerPath)),
    files.config,
  );
  const backend = new LocalBackend({
    dir: dirname(files.tokenizerPath),
    cache: null,
  });
  // The default: counts in the count cache's worker (a fresh cache per family).
  await using cache = createCountCache({ maxEntries: 16384 });
  const inWorker = new LocalBackend({
    dir: dirname(files.tokenizerPath),
    cache,
  });
  await inWorker.load();
  // Its own worker: sharing the first one's renders would make every count a repeat.
  await using parsedCache = createCountCache({ maxEntries: 16384 });
  const parsedWorker = new LocalBackend({
    dir: dirname(files.tokenizerPath),
    cache: parsedCache,
  });
  await parsedWorker.load();
  let tokenizeMs = 0;
  let tokenizedChars = 0;
  const timedTokenizer = {
    addedTokens: tokenizer.addedTokens,
    count: (text: string, options?: { addSpecialTokens?: boolean }) => {
      const start = performance.now();
      const n = tokenizer.count(text, options);
      tokenizeMs += performance.now() - start;
      tokenizedChars += text.length;
      return n;
    },
  };
  // Counts as the backend does (prefix reuse, line chunks where exact),
  // timing only the tokenizer's calls.
  const pieces = new PrefixCounter(timedTokenizer, "bench", new Map(), {
    lineChunks,
  });
  const prose = new ProseGenerator(7);
  const messages: { role: string; content: string }[] = [
    { role: "system", content: prose.text(400) },
  ];
  let charsPerToken = 4;
  const samples: TurnSample[] = [];
  const contextLength = 262144;
  for (let tokens = 0; tokens < CHECKPOINTS.at(-1)! + HALF_WINDOW;) {
    const chars = Math.round(TURN_TOKENS * charsPerToken);
    messages.push({ role: "user", content: prose.text(chars * 0.3) });
    messages.push({ role: "assistant", content: prose.text(chars * 0.7) });
    const request = { model: "m", messages: [...messages] };
    let start = performance.now();
    const counted = await backend.count(request, { contextLength });
    const backendMs = performance.now() - start;
    start = performance.now();
    const render = template.render({
      messages,
      add_generation_prompt: true,
      ...tokenizer.specialTokens,
    });
    const renderMs = performance.now() - start;
    // How long tokenizing the turn's new pieces takes, alone.
    tokenizeMs = 0;
    tokenizedChars = 0;
    const incremental = pieces.count(render);
    const near = CHECKPOINTS.some((c) =>
      Math.abs(incremental - c) < HALF_WINDOW
    );
    if (samples.length === 0) {
      charsPerToken = render.length / incremental;
    }
    if (Math.abs(counted - incremental) > 2) {
      // The backend renders from the vLLM-shaped context; allow tiny drift.
      console.error(`note: backend ${counted} vs direct ${incremental}`);
    }
    samples.push({
      tokens: incremental,
      counted,
      backendMs,
      workerMs: NaN,
      parsedMs: NaN,
      renderMs,
      tokenizeMs,
      fullMs: NaN,
      stockMs: NaN,
      render: near ? render : "",
    });
    tokens = incremental;
  }
  // The worker's counts replay the same turns on their own, after the
  // growth: the harness's work around each turn above (the calling thread's
  // count, the reference render, the JSON round trip) would otherwise keep
  // V8's background GC and compiler threads busy on 2 cores while a worker
  // counts. First the caller's own message objects, then each request
  // parsed from JSON text, in its own worker.
  for (
    const [pass, worker] of [["objects", inWorker], [
      "parsed",
      parsedWorker,
    ]] as const
  ) {
    for (const [turn, sample] of samples.entries()) {
      const request = { model: "m", messages: messages.slice(0, 3 + 2 * turn) };
      const sent = pass === "parsed"
        ? JSON.parse(JSON.stringify(request))
        : request;
      const start = performance.now();
      const counted = await worker.count(sent, { contextLength });
      const ms = performance.now() - start;
      if (counted !== sample.counted) {
        throw new Error(
          `${pass} worker ${counted} != calling thread ${sample.counted}`,
        );
      }
      if (pass === "parsed") sample.parsedMs = ms;
      else sample.workerMs = ms;
    }
  }
  // The full re-counts of the checkpoint turns' renders, after the growth:
  // their half-second allocation storms (the stock library's) would
  // otherwise land in the next turn's timed counts as GC pauses. The word
  // cache (bounded, so a whole 128k conversation never fits) holds what the
  // previous counts left in it, as it did turn by turn.
  for (const sample of samples) {
    if (sample.render === "") continue;
    let start = performance.now();
    const full = tokenizer.count(sample.render, { addSpecialTokens: false });
    sample.fullMs = performance.now() - start;
    start = performance.now();
    const stockFull = stock.encode(sample.render, { add_special_tokens: false })
      .ids.length;
    sample.stockMs = performance.now() - start;
    if (full !== sample.tokens || stockFull !== sample.tokens) {
      throw new Error(
        `incremental ${sample.tokens} != full ${full} or stock ${stockFull}`,
      );
    }
  }
  await backend[Symbol.asyncDispose]();
  await inWorker[Symbol.asyncDispose]();
  await parsedWorker[Symbol.asyncDispose]();
  const { segmentHits, segmentMisses, entries } = await cache.stats();

  const rows: string[] = [
    `#### ${files.family}: ${samples.length} turns, ~${
      Math.round(samples.at(-1)!.tokens / samples.length)
    } tokens a turn; text tokenized at the last turn: ${tokenizedChars} characters; worker cache ${
      JSON.stringify({ segmentHits, segmentMisses, entries })
    }`,
    "",
    "| near | turns | worker p50 / p99 | worker, request parsed from JSON p50 / p99 | calling thread p50 / p99 | render p50 | tokenizing new pieces p50 | full pure-JS re-count p50 / p99 | same, stock library p50 | native binding p50 / p99 | full / worker | full / worker (parsed) | full / calling thread | stock full / worker | native / worker |",
    "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
  ];
  for (const checkpoint of CHECKPOINTS) {
    const window = samples.filter((s) =>
      Math.abs(s.tokens - checkpoint) < HALF_WINDOW
    );
    const native = await nativeEncodeTimes(
      files.tokenizerPath,
      window.map((s) => s.render),
    );
    window.forEach((s, i) => {
      if (native.counts[i] !== s.tokens) {
        throw new Error(`native ${native.counts[i]} != ${s.tokens}`);
      }
    });
    const p = (pick: (s: TurnSample) => number, q: number) =>
      percentile(window.map(pick), q);
    const backend50 = p((s) => s.backendMs, 0.5);
    const worker50 = p((s) => s.workerMs, 0.5);
    const parsed50 = p((s) => s.parsedMs, 0.5);
    const full50 = p((s) => s.fullMs, 0.5);
    const stock50 = p((s) => s.stockMs, 0.5);
    const native50 = percentile(native.ms, 0.5);
    const both = (pick: (s: TurnSample) => number) =>
      `${ms(p(pick, 0.5))} / ${ms(p(pick, 0.99))}`;
    const ratio = (a: number, b: number) => `${(a / b).toFixed(1)}x`;
    rows.push(
      `| ${checkpoint / 1024}k | ${window.length} | ${
        both((s) => s.workerMs)
      } | ${both((s) => s.parsedMs)} | ${both((s) => s.backendMs)} | ${
        ms(p((s) => s.renderMs, 0.5))
      } | ${ms(p((s) => s.tokenizeMs, 0.5))} | ${both((s) => s.fullMs)} | ${
        ms(stock50)
      } | ${ms(native50)} / ${ms(percentile(native.ms, 0.99))} | ${
        ratio(full50, worker50)
      } | ${ratio(full50, parsed50)} | ${ratio(full50, backend50)} | ${
        ratio(stock50, worker50)
      } | ${ratio(native50, worker50)} |`,
    );
  }
  return rows;
}

async function throughputTable(): Promise<string[]> {
  const rows = [
    "| family | text | pure-JS tokens/s (cold) | pure-JS tokens/s (same text again) | pure-JS tokens/s (fresh text, warmed up) | stock library tokens/s (cold) | stock library tokens/s (fresh text, warmed up) | native tokens/s | native / pure-JS cold |",
    "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
  ];
  for (const name of ["qwen3", "llama3"]) {
    const files = family(name);
    const { tokenizer } = await firstLoad(files); // a fresh word cache
    const texts = [1, 2, 3].map((seed) =>
      new ProseGenerator(1000 + seed).text(100_000)
    );
    let tokens = 0;
    let cold = 0;
    let warm = 0;
    let stockCold = 0;
    const stock = new Tokenizer(
      JSON.parse(await Deno.readTextFile(files.tokenizerPath)),
      files.config,
    );
    for (const text of texts) {
      let start = performance.now();
      stock.encode(text, { add_special_tokens: false });
      stockCold += performance.now() - start;
      start = performance.now();
      tokens += tokenizer.count(text, { addSpecialTokens: false });
      cold += performance.now() - start;
      start = performance.now();
      tokenizer.count(text, { addSpecialTokens: false });
      warm += performance.now() - start;
    }
    // Then other fresh text, each tokenizer compiled and its common words
    // cached, as a long-lived worker meets each turn's new text.
    let fresh = 0;
    let stockFresh = 0;
    let freshTokens = 0;
    for (const seed of [1, 2, 3]) {
      const text = new ProseGenerator(2000 + seed).text(100_000);
      let start = performance.now();
      stock.encode(text, { add_special_tokens: false });
      stockFresh += performance.now() - start;
      start = performance.now();
      freshTokens += tokenizer.count(text, { addSpecialTokens: false });
      fresh += performance.now() - start;
    }
    // The warm-up encode in Node uses the first text: give it a fourth.
    const native = await nativeEncodeTimes(files.tokenizerPath, [
      new ProseGenerator(999).text(100_000),
      ...texts,
    ]);
    const nativeMs = native.ms.slice(1).reduce((a, b) => a + b, 0);
    const perSecond = (ms: number) => Math.round(tokens / ms * 1000);
    rows.push(
      `| ${name} | 3 x 100 KB, ${tokens} tokens | ${
        perSecond(cold).toLocaleString("en")
      } | ${perSecond(warm).toLocaleString("en")} | ${
        Math.round(freshTokens / fresh * 1000).toLocaleString("en")
      } | ${perSecond(stockCold).toLocaleString("en")} | ${
        Math.round(freshTokens / stockFresh * 1000).toLocaleString("en")
      } | ${perSecond(nativeMs).toLocaleString("en")} | ${
        (cold / nativeMs).toFixed(1)
      }x |`,
    );
  }
  return rows;
}

const started = performance.now();
const only = Deno.args.find((arg) => arg.startsWith("--family="))?.slice(9);
if (Deno.args.includes("--load-only")) {
  for (const row of await loadTable()) console.log(row);
  Deno.exit(0);
}
if (Deno.args.includes("--throughput-only")) {
  for (const row of await throughputTable()) console.log(row);
  Deno.exit(0);
}
console.log(`gc exposed: ${gc !== undefined}\n`);
const turnsOnly = Deno.args.includes("--turns-only");
if (!turnsOnly) {
  console.log("### First load and heap per model family\n");
  for (const row of await loadTable()) console.log(row);
}
console.log("\n### Per-turn count of a growing conversation\n");
for (const name of only === undefined ? ["qwen3", "llama3"] : [only]) {
  for (const row of await growConversation(family(name))) console.log(row);
  console.log();
}
if (turnsOnly) Deno.exit(0);
console.log("### Tokens per second on fresh prose-like text\n");
for (const row of await throughputTable()) console.log(row);
console.log(`\nTotal: ${((performance.now() - started) / 1000).toFixed(1)} s`);
