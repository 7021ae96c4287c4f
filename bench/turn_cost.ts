/**
 * What one agent turn's count costs as the conversation grows, with the
 * local backend over the Qwen3 files: one conversation per size (32k, 128k,
 * 512k and 1M tokens by default), each turn adding a user line, an
 * assistant tool call and a ~1,000-token tool result of fresh prose; the
 * request is built before the clock starts. The 25 turns up to each size
 * are timed, the sizes taking turns (one turn of each, then again), on the
 * calling thread (`cache: null`) and through the count worker (as
 * `incontext serve` counts), alternating: whatever slows the machine for a
 * while slows every size alike. The last line of each path states the
 * growth ratio, the largest size's p50 over the smallest's, of the
 * wall-clock time and of the process's CPU time (`process.cpuUsage()`,
 * every thread of the process: the worker's too).
 *
 *     npx --yes deno@2.9.6 run --config tests/deno.json --allow-read --allow-env --allow-write=/tmp bench/turn_cost.ts
 *
 * `TURN_COST_SIZES=32768,131072` picks the sizes; `TURN_COST_TURNS` (25) the
 * timed turns per size; `TURN_COST_PATHS=thread` one path (for a profile);
 * `TURN_COST_TRACE=1` prints each timed count; `TURN_COST_CHECK=0` skips
 * the cold backend's count (for a profile of the turns alone). Each
 * conversation grows to near its size turn by turn, each turn counted on
 * every path untimed, as an agent's earlier turns are. Every count is
 * checked against the other path's, and each conversation's last turn
 * against a cold backend's count of the whole conversation.
 *
 * @module
 */
import { dirname } from "node:path";
import { cpuUsage } from "node:process";
import { LocalBackend } from "../src/backends/local/mod.ts";
import { createCountCache } from "../src/cache/mod.ts";
import { MODEL_FILES } from "../tests/_kit/model_files.ts";
import { ProseGenerator } from "./_local_bench_text.ts";

const DIR = dirname(
  MODEL_FILES.find((files) => files.family === "qwen3")!.tokenizerPath,
);
const SIZES = (Deno.env.get("TURN_COST_SIZES") ?? "32768,131072,524288,1048576")
  .split(",").map(Number);
const TIMED = Number(Deno.env.get("TURN_COST_TURNS") ?? 25);
/** About 1,000 Qwen3 tokens of the generator's prose. */
const RESULT_CHARS = 3400;
const CONTEXT = 2_000_000;
const TRACE = Deno.env.get("TURN_COST_TRACE") !== undefined;
const CHECK = Deno.env.get("TURN_COST_CHECK") !== "0";

const TOOLS = [{
  type: "function",
  function: {
    name: "read_file",
    description: "Reads a file of the workspace.",
    parameters: {
      type: "object",
      properties: { path: { type: "string" } },
      required: ["path"],
    },
  },
}];

type Message = Record<string, unknown>;

/** One agent's conversation, grown to near its size. */
interface Conversation {
  readonly size: number;
  readonly messages: Message[];
  /** Fresh prose of its own: no two conversations share a piece. */
  readonly prose: ProseGenerator;
  turnNo: number;
  tokens: number;
}

/** Adds one turn: a user line, a tool call and its result. */
function addTurn(conversation: Conversation): void {
  const { messages, prose } = conversation;
  const turnNo = ++conversation.turnNo;
  const id = `call_${turnNo}`;
  messages.push(
    { role: "user", content: `Step ${turnNo}: ${prose.text(60)}` },
    {
      role: "assistant",
      content: "",
      tool_calls: [{
        id,
        type: "function",
        function: {
          name: "read_file",
          arguments: JSON.stringify({ path: `src/file_${turnNo}.ts` }),
        },
      }],
    },
    { role: "tool", tool_call_id: id, content: prose.text(RESULT_CHARS) },
  );
}

function request(conversation: Conversation): Record<string, unknown> {
  return {
    messages: [...conversation.messages],
    tools: TOOLS,
    max_tokens: 8192,
  };
}

function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.ceil((p / 100) * sorted.length) - 1;
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank))]!;
}

const options = { contextLength: CONTEXT, kind: "chat" as const };
await using cache = createCountCache({ maxEntries: 65536 });
const ALL_PATHS = {
  thread: () => new LocalBackend({ dir: DIR, cache: null }),
  worker: () => new LocalBackend({ dir: DIR, cache }),
};
type PathName = keyof typeof ALL_PATHS;
const chosen = (Deno.env.get("TURN_COST_PATHS") ?? "thread,worker").split(
  ",",
) as PathName[];
const paths = Object.fromEntries(
  chosen.map((name) => [name, ALL_PATHS[name]()]),
) as Record<PathName, LocalBackend>;
await Promise.all(Object.values(paths).map((backend) => backend.load()));

const names = chosen;
/** One path's timed turns near one size: wall-clock and the process's CPU time. */
interface Timed {
  readonly wall: number[];
  readonly cpu: number[];
}
const rows: {
  size: number;
  tokens: number;
  p50: number[];
  p99: number[];
  cpu50: number[];
}[] = [];

/** Counts one turn on every path, in an order that alternates; checks they agree. */
async function countTurn(
  conversation: Conversation,
  timed: Timed[] | null,
  turn: number,
) {
  const body = request(conversation);
  let agreed: number | undefined;
  for (let i = 0; i < names.length; i++) {
    const name = names[(i + turn) % names.length]!;
    const cpu = cpuUsage();
    const start = performance.now();
    const count = await paths[name].count(body, options);
    const ms = performance.now() - start;
    const used = cpuUsage(cpu);
    const cpuMs = (used.user + used.system) / 1000;
    if (timed !== null) {
      timed[names.indexOf(name)]!.wall.push(ms);
      timed[names.indexOf(name)]!.cpu.push(cpuMs);
      if (TRACE) {
        console.log(`${name} ${ms.toFixed(2)} ms, CPU ${cpuMs.toFixed(2)} ms`);
      }
    }
    if (agreed !== undefined && agreed !== count) {
      throw new Error(`the paths disagree: ${agreed} != ${count}`);
    }
    agreed = count;
  }
  return agreed!;
}

console.log(
  `Qwen3, local backend; each turn adds a user line, a tool call and a ~1,000-token tool result; ${TIMED} timed turns per size, the sizes taking turns`,
);
const conversations: Conversation[] = SIZES.map((size, k) => ({
  size,
  messages: [{
    role: "system",
    content: "You are a coding agent working in a repository.",
  }],
  prose: new ProseGenerator(7 + k),
  turnNo: 0,
  tokens: 0,
}));
// Each grows to near its size, every turn counted untimed, as the agent's
// earlier turns were.
for (const conversation of conversations) {
  for (
    let i = 0;
    conversation.tokens + TIMED * 1100 < conversation.size;
    i++
  ) {
    addTurn(conversation);
    conversation.tokens = await countTurn(conversation, null, i);
  }
}
const timed: Timed[][] = conversations.map(() =>
  names.map(() => ({ wall: [], cpu: [] }))
);
for (let i = 0; i < TIMED; i++) {
  for (const [k, conversation] of conversations.entries()) {
    addTurn(conversation);
    conversation.tokens = await countTurn(conversation, timed[k]!, i);
  }
}
for (const [k, conversation] of conversations.entries()) {
  if (CHECK) {
    await using cold = new LocalBackend({ dir: DIR, cache: null });
    const full = await cold.count(request(conversation), options);
    if (full !== conversation.tokens) {
      throw new Error(
        `the last turn near ${conversation.size}: ${conversation.tokens} != cold ${full}`,
      );
    }
  }
  const times = timed[k]!;
  rows.push({
    size: conversation.size,
    tokens: conversation.tokens,
    p50: times.map((t) => percentile(t.wall, 50)),
    p99: times.map((t) => percentile(t.wall, 99)),
    cpu50: times.map((t) => percentile(t.cpu, 50)),
  });
  console.log(
    `near ${conversation.size}: ${conversation.tokens} tokens, ${conversation.messages.length} messages; ${
      names.map((name, i) =>
        `${name} p50 ${rows.at(-1)!.p50[i]!.toFixed(2)} ms, p99 ${
          rows.at(-1)!.p99[i]!.toFixed(2)
        } ms, CPU p50 ${rows.at(-1)!.cpu50[i]!.toFixed(2)} ms`
      ).join("; ")
    }`,
  );
}
const first = rows[0]!;
const last = rows.at(-1)!;
for (const [i, name] of names.entries()) {
  console.log(
    `${name}: p50 ${last.p50[i]!.toFixed(2)} ms near ${last.size} / ${
      first.p50[i]!.toFixed(2)
    } ms near ${first.size} = ${
      (last.p50[i]! / first.p50[i]!).toFixed(2)
    }x; CPU p50 ${last.cpu50[i]!.toFixed(2)} / ${
      first.cpu50[i]!.toFixed(2)
    } ms = ${(last.cpu50[i]! / first.cpu50[i]!).toFixed(2)}x`,
  );
}
for (const backend of Object.values(paths)) {
  await backend[Symbol.asyncDispose]();
}
