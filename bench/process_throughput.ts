/**
 * Throughput with 64 concurrent clients, every server its own process: the
 * fake vLLM upstream, `incontext serve` (vllm backend against the project's
 * tokenize server, and local backend), and the Portkey gateway as the peer.
 * The clients are `fetch` loops in this process. Two kinds of load:
 *
 * - **repeat**: one ~2 KB chat request again and again (a count-cache hit);
 * - **new**: 64 growing conversations, every request a new, longer one
 *   (~2 KB to ~40 KB), as agents send them.
 *
 * Each run is bounded in time (4 s); the paths run twice, in the order
 * A B C D D C B A, so drift hits all alike.
 *
 *     deno run --config tests/deno.json -A bench/process_throughput.ts
 *
 * `PROCESS_THROUGHPUT_BASELINE=DIR` names another checkout of the project
 * (such as `git worktree add DIR main`): its `incontext serve` with the local
 * backend joins the paths, to compare two versions of the code in the same
 * run.
 *
 * @module
 */
import { ProseGenerator } from "./_local_bench_text.ts";
import { chatBody, printMachine, printTable } from "./_proxy_bench_setup.ts";
import {
  portkeyHeaders,
  QWEN3_DIR,
  startPortkey,
  startProxy,
  startTokenizeServer,
  startUpstream,
} from "./_processes.ts";

const CLIENTS = 64;
const SECONDS = 4;
const WARMUP_SECONDS = 1;

interface Target {
  readonly label: string;
  readonly url: string;
  readonly headers: Record<string, string>;
}

interface Run {
  readonly requests: number;
  readonly seconds: number;
}

const started = performance.now();
printMachine();

await using upstream = await startUpstream();
await using tokenizer = await startTokenizeServer();
await using vllmProxy = await startProxy(upstream.url, {
  INCONTEXT_BACKEND: "vllm",
  INCONTEXT_TOKENIZER_URL: `${tokenizer.url}/tokenize`,
  INCONTEXT_ANCHOR_TOLERANCE: "0.5",
});
await using localProxy = await startProxy(upstream.url, {
  INCONTEXT_BACKEND: "local",
  INCONTEXT_TOKENIZER_DIR: QWEN3_DIR,
  INCONTEXT_ANCHOR_TOLERANCE: "0.5",
});
const baselineDir = Deno.env.get("PROCESS_THROUGHPUT_BASELINE");
await using baselineProxy = baselineDir === undefined
  ? undefined
  : await startProxy(upstream.url, {
    INCONTEXT_BACKEND: "local",
    INCONTEXT_TOKENIZER_DIR: QWEN3_DIR,
    INCONTEXT_ANCHOR_TOLERANCE: "0.5",
  }, { root: baselineDir });
await using portkey = await startPortkey();

const DIRECT = "direct to the upstream";
const targets: Target[] = [
  { label: DIRECT, url: upstream.url, headers: {} },
  {
    label: "incontext serve, vllm backend + tokenize server",
    url: vllmProxy.url,
    headers: {},
  },
  {
    label: "incontext serve, local backend",
    url: localProxy.url,
    headers: {},
  },
  ...(baselineProxy === undefined ? [] : [{
    label: `incontext serve, local backend, from ${baselineDir}`,
    url: baselineProxy.url,
    headers: {},
  }]),
  {
    label: "Portkey gateway (peer)",
    url: portkey.url,
    headers: portkeyHeaders(upstream.url),
  },
];

async function post(
  target: Target,
  body: Uint8Array<ArrayBuffer>,
): Promise<string> {
  const response = await fetch(`${target.url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", ...target.headers },
    body,
  });
  const json = await response.json();
  if (response.status !== 200) {
    throw new Error(`${target.label} answered ${response.status}`);
  }
  return json.choices[0].message.content;
}

const repeated = chatBody(2_000);
const encoder = new TextEncoder();
let seed = 1;

/** One client's requests: the same body, or its own conversation growing ~2 KB a turn. */
function client(kind: "repeat" | "new") {
  if (kind === "repeat") {
    return { next: () => repeated, answer: (_: string) => {} };
  }
  const prose = new ProseGenerator(seed++);
  let messages: { role: string; content: string }[] = [];
  const restart = () => {
    messages = [{ role: "system", content: `You are agent ${seed}.` }];
  };
  restart();
  return {
    next() {
      // Past ~40 KB, a new conversation starts: the sizes stay comparable.
      if (messages.length > 40) restart();
      messages.push({ role: "user", content: prose.text(1_800) });
      return encoder.encode(
        JSON.stringify({ model: "Qwen/Qwen3-8B", max_tokens: 8192, messages }),
      );
    },
    answer(content: string) {
      messages.push({ role: "assistant", content });
    },
  };
}

async function load(
  target: Target,
  kind: "repeat" | "new",
  seconds: number,
): Promise<Run> {
  const start = performance.now();
  const deadline = start + seconds * 1000;
  let requests = 0;
  await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      const own = client(kind);
      while (performance.now() < deadline) {
        own.answer(await post(target, own.next()));
        requests++;
      }
    }),
  );
  return { requests, seconds: (performance.now() - start) / 1000 };
}

for (const kind of ["repeat", "new"] as const) {
  const runs = new Map<string, Run[]>(targets.map((t) => [t.label, []]));
  for (const order of [targets, [...targets].reverse()]) {
    for (const target of order) {
      await load(target, kind, WARMUP_SECONDS);
      runs.get(target.label)!.push(await load(target, kind, SECONDS));
    }
  }
  const rate = (label: string) => {
    const all = runs.get(label)!;
    return all.reduce((sum, run) => sum + run.requests, 0) /
      all.reduce((sum, run) => sum + run.seconds, 0);
  };
  console.log(
    `\n${CLIENTS} concurrent clients, ${
      kind === "repeat"
        ? `one ~2 KB chat request repeated (${repeated.byteLength} B)`
        : "64 growing conversations, every request new (~2 KB to ~40 KB)"
    }; two runs of ${SECONDS} s per path`,
  );
  printTable(
    ["path", "requests/s", "ratio to direct"],
    targets.map(({ label }) => [
      label,
      rate(label).toFixed(0),
      `${(rate(label) / rate(DIRECT)).toFixed(2)}x`,
    ]),
  );
}
console.log(`runtime: ${((performance.now() - started) / 1000).toFixed(1)} s`);
