/**
 * The real agent turn, every server its own process: the fake vLLM upstream,
 * `incontext serve` in front of it, and (for the vllm backend) the project's
 * tokenize server over the Qwen3 files. Conversations grow by ~1,000 tokens
 * of fresh prose a turn to ~128k tokens, so every turn is a new request, as
 * an agent sends it. Each turn goes direct to the upstream, through incontext
 * and (with the local backend) through the Portkey gateway, in an order that
 * alternates; the figures are per turn near 8k, 32k and 128k tokens.
 *
 *     deno run -A bench/agent_turn.ts
 *
 * `AGENT_TURN_CONVERSATIONS` (default 12) sets how many conversations the
 * local backend gets, `AGENT_TURN_VLLM_CONVERSATIONS` (default 3) the vllm
 * backend, `AGENT_TURN_BACKENDS` (default `local,vllm`) which backends
 * run; `AGENT_TURN_PROFILE=DIR` writes a V8 CPU profile of each proxy
 * process into DIR. The proxy logs JSON lines: its access records give each
 * request's time to the budget decision, reported beside the totals.
 *
 * @module
 */
import { ProseGenerator } from "./_local_bench_text.ts";
import { printMachine, printTable } from "./_proxy_bench_setup.ts";
import {
  portkeyHeaders,
  QWEN3_DIR,
  type ServerProcess,
  startPortkey,
  startProxy,
  startTokenizeServer,
  startUpstream,
} from "./_processes.ts";

const CONVERSATIONS = Number(Deno.env.get("AGENT_TURN_CONVERSATIONS") ?? 12);
// The tokenize server re-tokenizes each whole conversation per turn (~0.7 s
// at 128k tokens): fewer conversations keep this backend's pass in minutes.
const VLLM_CONVERSATIONS = Number(
  Deno.env.get("AGENT_TURN_VLLM_CONVERSATIONS") ?? 3,
);
const TURNS = 128;
/** ~1,000 Qwen3 tokens of the generator's prose. */
const TURN_CHARS = 3400;
/** The turns each figure is taken from: five turns ending near the size. */
const BUCKETS = [
  { label: "8k", turns: [6, 10] },
  { label: "32k", turns: [30, 34] },
  { label: "128k", turns: [124, 128] },
] as const;
const PROFILE_DIR = Deno.env.get("AGENT_TURN_PROFILE");

type Path = "direct" | "incontext" | "portkey";

interface Sample {
  readonly turn: number;
  readonly ms: number;
  readonly promptTokens?: number;
  /** The request id sent, to find the proxy's access record. */
  readonly id: string;
}

/** What the proxy's access records say of a request: its time to the budget decision. */
const countTimes = new Map<string, number>();

function readAccessRecord(line: string): void {
  if (!line.includes('"incontext.access"')) return;
  const { properties } = JSON.parse(line);
  countTimes.set(properties.requestId, properties.countMs);
}

const encoder = new TextEncoder();

async function timedPost(
  url: string,
  body: Uint8Array<ArrayBuffer>,
  headers: Record<string, string>,
): Promise<{ ms: number; response: Response; json: Record<string, unknown> }> {
  const start = performance.now();
  const response = await fetch(`${url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body,
  });
  const json = await response.json();
  const ms = performance.now() - start;
  if (response.status !== 200) {
    throw new Error(`${url} answered ${response.status}`);
  }
  return { ms, response, json };
}

/** Runs every conversation through every path; returns the samples per path. */
async function conversations(
  targets: ReadonlyMap<Path, { url: string; headers: Record<string, string> }>,
  count: number,
  turns: number,
  seedBase: number,
): Promise<Map<Path, Sample[]>> {
  const samples = new Map<Path, Sample[]>(
    [...targets.keys()].map((path) => [path, []]),
  );
  const paths = [...targets.keys()];
  for (let c = 0; c < count; c++) {
    const prose = new ProseGenerator(seedBase + c);
    const messages: { role: string; content: string }[] = [{
      role: "system",
      content: `You are a coding agent. Session ${seedBase + c}.`,
    }];
    for (let turn = 1; turn <= turns; turn++) {
      messages.push({ role: "user", content: prose.text(TURN_CHARS) });
      const body = encoder.encode(JSON.stringify({
        model: "Qwen/Qwen3-8B",
        max_tokens: 8192,
        messages,
      }));
      // Rotate the order so that no path always goes first.
      const order = paths.map((_, i) => paths[(i + turn + c) % paths.length]!);
      let reply = "";
      for (const path of order) {
        const target = targets.get(path)!;
        const id = `${seedBase}-${c}-${turn}-${path}`;
        const { ms, response, json } = await timedPost(
          target.url,
          body,
          { ...target.headers, "x-request-id": id },
        );
        const tokens = response.headers.get("x-incontext-prompt-tokens");
        samples.get(path)!.push({
          turn,
          ms,
          id,
          ...(tokens === null ? {} : { promptTokens: Number(tokens) }),
        });
        const choices = json.choices as { message: { content: string } }[];
        reply = choices[0]!.message.content;
      }
      messages.push({ role: "assistant", content: reply });
    }
  }
  return samples;
}

function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.ceil((p / 100) * sorted.length) - 1;
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank))]!;
}

const f = (ms: number) => ms.toFixed(2);
const signed = (ms: number) => `${ms >= 0 ? "+" : ""}${ms.toFixed(2)}`;

function report(title: string, samples: Map<Path, Sample[]>): void {
  console.log(`\n${title}`);
  const rows: string[][] = [];
  for (const bucket of BUCKETS) {
    const inBucket = (path: Path) =>
      (samples.get(path) ?? []).filter((s) =>
        s.turn >= bucket.turns[0] && s.turn <= bucket.turns[1]
      );
    const direct = inBucket("direct").map((s) => s.ms);
    const tokens = inBucket("incontext").map((s) => s.promptTokens ?? 0);
    const meanTokens = tokens.reduce((a, b) => a + b, 0) / tokens.length;
    const d50 = percentile(direct, 50);
    const d99 = percentile(direct, 99);
    for (const path of ["incontext", "portkey"] as const) {
      const through = inBucket(path).map((s) => s.ms);
      if (through.length === 0) continue;
      const p50 = percentile(through, 50);
      const p99 = percentile(through, 99);
      const counts = inBucket(path).flatMap((s) => {
        const ms = countTimes.get(s.id);
        return ms === undefined ? [] : [ms];
      });
      rows.push([
        bucket.label,
        String(Math.round(meanTokens)),
        path,
        String(through.length),
        `${f(d50)} / ${f(d99)}`,
        `${f(p50)} / ${f(p99)}`,
        signed(p50 - d50),
        signed(p99 - d99),
        (p99 / p50).toFixed(2),
        counts.length === 0
          ? "-"
          : `${f(percentile(counts, 50))} / ${f(percentile(counts, 99))}`,
      ]);
    }
  }
  printTable([
    "near",
    "mean prompt tokens",
    "path",
    "turns",
    "direct p50 / p99 ms",
    "through p50 / p99 ms",
    "added p50",
    "added p99",
    "p99 / p50",
    "of which reading + counting p50 / p99 ms",
  ], rows);
}

const started = performance.now();
printMachine();
console.log(
  `${CONVERSATIONS} conversations with the local backend, ${VLLM_CONVERSATIONS} with vllm, ${TURNS} turns of ~1,000 tokens each; every server its own process`,
);

await using upstream = await startUpstream();
await using portkey = await startPortkey();
const direct = { url: upstream.url, headers: {} };

async function withProxy(
  name: string,
  env: Record<string, string>,
  { peer, count }: { readonly peer: boolean; readonly count: number },
): Promise<void> {
  const profile = PROFILE_DIR === undefined ? [] : [
    "--cpu-prof",
    `--cpu-prof-dir=${PROFILE_DIR}`,
    `--cpu-prof-name=${name}.cpuprofile`,
  ];
  await using proxy: ServerProcess = await startProxy(upstream.url, {
    ...env,
    // Its access records tell the time to the budget decision per request.
    INCONTEXT_LOG_FORMAT: "json",
    // The fake upstream's usage is a rough count: no anchor warnings.
    INCONTEXT_ANCHOR_TOLERANCE: "0.5",
  }, { denoArgs: profile, onLine: readAccessRecord });
  const targets = new Map<
    Path,
    { url: string; headers: Record<string, string> }
  >([
    ["direct", direct],
    ["incontext", { url: proxy.url, headers: {} }],
    ...(peer
      ? [
        ["portkey", {
          url: portkey.url,
          headers: portkeyHeaders(upstream.url),
        }] as const,
      ]
      : []),
  ]);
  // Warm-up: compiles the paths of every process; not reported.
  await conversations(targets, 1, 12, 9000);
  const samples = await conversations(targets, count, TURNS, 1);
  report(`backend ${name}`, samples);
}

const BACKENDS = (Deno.env.get("AGENT_TURN_BACKENDS") ?? "local,vllm").split(
  ",",
);
if (BACKENDS.includes("local")) {
  await withProxy("local", {
    INCONTEXT_BACKEND: "local",
    INCONTEXT_TOKENIZER_DIR: QWEN3_DIR,
  }, { peer: true, count: CONVERSATIONS });
}
if (BACKENDS.includes("vllm")) {
  await using tokenizer = await startTokenizeServer();
  await withProxy("vllm", {
    INCONTEXT_BACKEND: "vllm",
    INCONTEXT_TOKENIZER_URL: `${tokenizer.url}/tokenize`,
  }, { peer: false, count: VLLM_CONVERSATIONS });
}
console.log(`\n${((performance.now() - started) / 1000).toFixed(0)} s`);
