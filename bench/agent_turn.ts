/**
 * The real agent turn, every server its own process: the fake vLLM upstream,
 * `incontext serve` in front of it, the project's tokenize server over the
 * Qwen3 files and, when its environment is given, vLLM's own API server over
 * the same files. Conversations grow by ~1,000 tokens of fresh prose a turn
 * to ~128k tokens, so every turn is a new request, as an agent sends it.
 * Each turn goes direct to the upstream, through incontext and (with the
 * local backend) through the Portkey gateway, in an order that alternates;
 * the figures are per turn near 8k, 32k and 128k tokens, or the sizes
 * `AGENT_TURN_SIZES` names (`32768,131072,524288,1048576`; past 192k, give
 * the servers a context length whose window, three quarters of it, holds
 * the largest: `BENCH_CONTEXT_LENGTH=1441792` for 1M), with each path's
 * added p50 at the largest size over the smallest.
 *
 *     deno run --config tests/deno.json -A bench/agent_turn.ts
 *
 * Before a conversation's turns are sent, the reference tokenizer (vLLM's
 * own `/tokenize` when its environment is given, the project's tokenize
 * server otherwise) counts each, in order and timed on its own, and the
 * upstream reports those counts in `usage`, as a real vLLM would: the column
 * `count = usage` is how often the proxy's count equalled it.
 *
 * The passes: `local` (the local backend), `vllm` (the vllm backend over the
 * project's tokenize server) and `vllm-api` (the vllm backend over vLLM's own
 * API server, `AGENT_TURN_VLLM_PYTHON` and `AGENT_TURN_VLLM_SRC`, see
 * `_vllm_server.ts`; skipped when they are not set).
 * `AGENT_TURN_BACKENDS` (default `local,vllm,vllm-api`) picks the passes,
 * `AGENT_TURN_CONVERSATIONS` (default 12) sets how many conversations the
 * local backend gets, `AGENT_TURN_VLLM_CONVERSATIONS` (default 3) each vllm
 * pass; `AGENT_TURN_PROFILE=DIR` writes a V8 CPU profile of each proxy
 * process into DIR. `AGENT_TURN_BASELINE=DIR` names another checkout of the
 * project (such as `git worktree add DIR main`): its `incontext serve` runs
 * beside this one's, with the same settings, and every turn goes through both
 * in the rotating order, so that two versions of the code are compared in
 * the same run; `AGENT_TURN_BASELINE_ENV=NAME=VALUE,...` gives that one
 * proxy settings of its own (with `AGENT_TURN_BASELINE=.`, the same code
 * with a setting changed, such as `INCONTEXT_ON_EXHAUSTED=reject`). The proxy
 * logs JSON lines: its access records give each
 * request's time to the budget decision, reported beside the totals.
 *
 * @module
 */
import { ProseGenerator } from "./_local_bench_text.ts";
import { printMachine } from "./_proxy_bench_setup.ts";
import {
  CONTEXT_LENGTH,
  portkeyHeaders,
  QWEN3_DIR,
  type ServerProcess,
  startPortkey,
  startProxy,
  startTokenizeServer,
  startUpstream,
} from "./_processes.ts";
import {
  bucketsOf,
  type Path,
  type ReferenceSample,
  report,
  reportReference,
  type Sample,
  verifications,
} from "./_agent_turn_report.ts";
import { replyTo, USAGE_PATH, usageKey } from "./_bench_upstream_rules.ts";
import {
  SERVED_MODEL,
  startVllmServer,
  vllmEnvironment,
} from "./_vllm_server.ts";

const CONVERSATIONS = Number(Deno.env.get("AGENT_TURN_CONVERSATIONS") ?? 12);
// vLLM's own /tokenize re-tokenizes each whole conversation per turn, in
// Python: fewer conversations keep a vllm pass in minutes.
const VLLM_CONVERSATIONS = Number(
  Deno.env.get("AGENT_TURN_VLLM_CONVERSATIONS") ?? 3,
);
const BACKENDS = (Deno.env.get("AGENT_TURN_BACKENDS") ?? "local,vllm,vllm-api")
  .split(",");
/** ~1,000 Qwen3 tokens of the generator's prose. */
const TURN_CHARS = 3400;
/** The sizes reported (`AGENT_TURN_SIZES`, in tokens), each from the nine turns ending near it. */
const BUCKETS = bucketsOf(
  (Deno.env.get("AGENT_TURN_SIZES") ?? "8192,32768,131072").split(",").map(
    Number,
  ),
  1024,
);
const TURNS = BUCKETS.at(-1)!.turns[1];
const PROFILE_DIR = Deno.env.get("AGENT_TURN_PROFILE");
const BASELINE_DIR = Deno.env.get("AGENT_TURN_BASELINE");
/** Settings only the baseline's proxy gets. */
const BASELINE_ENV: Record<string, string> = Object.fromEntries(
  (Deno.env.get("AGENT_TURN_BASELINE_ENV") ?? "").split(",").filter(Boolean)
    .map((pair) => {
      const at = pair.indexOf("=");
      if (at < 1) {
        throw new Error(`AGENT_TURN_BASELINE_ENV: ${pair} is not NAME=VALUE`);
      }
      return [pair.slice(0, at), pair.slice(at + 1)];
    }),
);

interface Target {
  readonly url: string;
  readonly headers: Record<string, string>;
}

/** What the proxy's access records say of a request: its time to the budget decision. */
const countTimes = new Map<string, number>();

function readAccessRecord(line: string): void {
  if (!line.includes('"incontext.access"')) return;
  const { properties } = JSON.parse(line);
  countTimes.set(properties.requestId, properties.countMs);
}

const encoder = new TextEncoder();

async function post(
  url: string,
  body: Uint8Array<ArrayBuffer> | string,
  headers: Record<string, string> = {},
): Promise<{ ms: number; response: Response; json: Record<string, unknown> }> {
  const start = performance.now();
  const response = await fetch(url, {
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

type Message = { readonly role: string; readonly content: string };

/** A conversation's requests, one per turn, each the whole conversation so far. */
function conversationTurns(seed: number, turns: number): Message[][] {
  const prose = new ProseGenerator(seed);
  const messages: Message[] = [{
    role: "system",
    content: `You are a coding agent. Session ${seed}.`,
  }];
  const requests: Message[][] = [];
  for (let turn = 1; turn <= turns; turn++) {
    messages.push({ role: "user", content: prose.text(TURN_CHARS) });
    requests.push([...messages]);
    messages.push({ role: "assistant", content: replyTo(messages) });
  }
  return requests;
}

/**
 * Counts each turn with the reference tokenizer, in the order an agent sends
 * them, and tells the upstream each count. This runs before a conversation's
 * timed turns, not between them: the reference's work after it answers (a
 * Python server's garbage, its log line) would land in the timed turns.
 */
async function countReference(
  requests: readonly Message[][],
): Promise<ReferenceSample[]> {
  const samples: ReferenceSample[] = [];
  for (const [index, messages] of requests.entries()) {
    const { ms, json } = await post(
      `${reference.url}/tokenize`,
      JSON.stringify({ model: SERVED_MODEL, messages }),
    );
    const count = json.count as number;
    const told = await fetch(`${upstream.url}${USAGE_PATH}`, {
      method: "POST",
      body: JSON.stringify({ key: usageKey(messages), count }),
    });
    await told.body?.cancel();
    samples.push({ turn: index + 1, ms, count });
  }
  return samples;
}

/** Sends one turn by one path. */
async function send(
  target: Target,
  body: Uint8Array<ArrayBuffer>,
  { turn, id, expected }: {
    readonly turn: number;
    readonly id: string;
    readonly expected: string;
  },
): Promise<Sample> {
  const { ms, response, json } = await post(
    `${target.url}/v1/chat/completions`,
    body,
    { ...target.headers, "x-request-id": id },
  );
  const choices = json.choices as { message: { content: string } }[];
  if (choices[0]!.message.content !== expected) {
    throw new Error(`${id}: the upstream's reply is not replyTo()'s`);
  }
  const tokens = response.headers.get("x-incontext-prompt-tokens");
  const usage = json.usage as { prompt_tokens?: number } | undefined;
  return {
    turn,
    ms,
    id,
    ...(tokens === null ? {} : { promptTokens: Number(tokens) }),
    ...(usage?.prompt_tokens === undefined
      ? {}
      : { usageTokens: usage.prompt_tokens }),
  };
}

/** Runs every conversation through every path; returns the samples per path and the reference's. */
async function conversations(
  targets: ReadonlyMap<Path, Target>,
  { count, turns, seedBase }: {
    readonly count: number;
    readonly turns: number;
    readonly seedBase: number;
  },
): Promise<{ paths: Map<Path, Sample[]>; reference: ReferenceSample[] }> {
  const paths = new Map<Path, Sample[]>(
    [...targets.keys()].map((path) => [path, []]),
  );
  const referenceSamples: ReferenceSample[] = [];
  const names = [...targets.keys()];
  for (let c = 0; c < count; c++) {
    const requests = conversationTurns(seedBase + c, turns);
    referenceSamples.push(...await countReference(requests));
    for (const [index, messages] of requests.entries()) {
      const turn = index + 1;
      // In the order the openai Python SDK writes a body (openai 3.22.1):
      // the messages first, then the model and the cap.
      const body = encoder.encode(JSON.stringify({
        messages,
        model: SERVED_MODEL,
        max_tokens: 8192,
      }));
      // Rotate the order so that no path always goes first.
      const order = names.map((_, i) => names[(i + turn + c) % names.length]!);
      for (const path of order) {
        paths.get(path)!.push(
          await send(targets.get(path)!, body, {
            turn,
            id: `${seedBase}-${c}-${turn}-${path}`,
            expected: replyTo(messages),
          }),
        );
      }
    }
  }
  return { paths, reference: referenceSamples };
}

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
  const proxyEnv = {
    ...env,
    // Its access records tell the time to the budget decision per request.
    INCONTEXT_LOG_FORMAT: "json",
    // A turn's anchor (the last turn's usage plus a rough estimate of what
    // was appended) is off by more than the default 2% on invented words:
    // no warning a turn.
    INCONTEXT_ANCHOR_TOLERANCE: "0.5",
  };
  await using proxy: ServerProcess = await startProxy(upstream.url, proxyEnv, {
    denoArgs: profile,
    onLine: readAccessRecord,
  });
  await using baseline = BASELINE_DIR === undefined
    ? undefined
    : await startProxy(upstream.url, { ...proxyEnv, ...BASELINE_ENV }, {
      root: BASELINE_DIR,
      onLine: readAccessRecord,
    });
  const targets = new Map<Path, Target>([
    ["direct", { url: upstream.url, headers: {} }],
    ["incontext", { url: proxy.url, headers: {} }],
    ...(baseline === undefined
      ? []
      : [["baseline", { url: baseline.url, headers: {} }] as const]),
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
  await conversations(targets, { count: 1, turns: 12, seedBase: 9000 });
  const { paths, reference: calls } = await conversations(targets, {
    count,
    turns: TURNS,
    seedBase: 1,
  });
  report(`backend ${name}`, paths, countTimes, BUCKETS);
  const metrics = await (await fetch(`${proxy.url}/incontext/metrics`))
    .text();
  console.log(verifications(metrics));
  reportReference(
    `${reference.name} /tokenize, the same turns`,
    calls,
    BUCKETS,
  );
}

const started = performance.now();
printMachine();
console.log(
  `${CONVERSATIONS} conversations with the local backend, ${VLLM_CONVERSATIONS} with each vllm pass, ${TURNS} turns of ~1,000 tokens each; every server its own process, with a context length of ${CONTEXT_LENGTH}`,
);

const vllmEnv = vllmEnvironment();
await using upstream = await startUpstream({ usageFromBench: true });
await using portkey = await startPortkey();
await using tokenizeServer = await startTokenizeServer();
await using vllm = vllmEnv === undefined
  ? undefined
  : await startVllmServer(vllmEnv);
const reference = vllm === undefined
  ? { name: "the project's tokenize server", url: tokenizeServer.url }
  : { name: "vLLM's own API server", url: vllm.url };
console.log(
  vllm === undefined
    ? "vLLM's own API server: not run, as AGENT_TURN_VLLM_PYTHON and AGENT_TURN_VLLM_SRC are not both set; the reference tokenizer is the project's tokenize server"
    : `vLLM's own API server: ${vllm.versions}; it is the reference tokenizer`,
);

if (BACKENDS.includes("local")) {
  await withProxy("local", {
    INCONTEXT_BACKEND: "local",
    INCONTEXT_TOKENIZER_DIR: QWEN3_DIR,
  }, { peer: true, count: CONVERSATIONS });
}
if (BACKENDS.includes("vllm")) {
  await withProxy("vllm, over the project's tokenize server", {
    INCONTEXT_BACKEND: "vllm",
    INCONTEXT_TOKENIZER_URL: `${tokenizeServer.url}/tokenize`,
  }, { peer: false, count: VLLM_CONVERSATIONS });
}
if (BACKENDS.includes("vllm-api")) {
  if (vllm === undefined) {
    console.log(
      "\nbackend vllm, over vLLM's own API server: skipped, as AGENT_TURN_VLLM_PYTHON and AGENT_TURN_VLLM_SRC are not both set",
    );
  } else {
    await withProxy("vllm, over vLLM's own API server", {
      INCONTEXT_BACKEND: "vllm",
      INCONTEXT_TOKENIZER_URL: `${vllm.url}/tokenize`,
    }, { peer: false, count: VLLM_CONVERSATIONS });
  }
}
console.log(`\n${((performance.now() - started) / 1000).toFixed(0)} s`);
