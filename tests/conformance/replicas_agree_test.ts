// Covers: src/replicas/anchors.ts, src/replicas/store.ts, src/replicas/prefetch_backend.ts, src/anchors/usage.ts, src/cli/serve/replicas.ts
/**
 * Two `incontext serve` replicas sharing a real Redis (Debian's
 * redis-server) budget a conversation whose turns alternate between them
 * exactly as one replica alone budgets it: back to back or with pauses,
 * plain or streamed (read to its end, or closed at `[DONE]` as OpenAI's
 * Python SDK does), with each turn sent twice, and after a turn during which
 * Redis answered nothing, so that every turn is anchored on the record the
 * other replica has just written. And the store's client takes an answer
 * Redis gave in time while its thread was held past the deadline, writes
 * while Redis is past it, and tries again as soon as Redis answers late.
 */
import { deepStrictEqual, strictEqual } from "node:assert/strict";
import { serveFakeUpstream } from "../../src/testing/mod.ts";
import { redisConnection } from "../../src/replicas/connection.ts";
import { SharedStore } from "../../src/replicas/store.ts";
import { type RedisServer, startRedisServer } from "./_redis_server.ts";
import { type Replicas, startReplicas } from "./_replicas.ts";

/** How many conversations each scenario runs: a race shows in some runs only. */
const RUNS = 20;

/** Turns of one conversation. */
const TURNS = 8;

/** The pause between two turns of the paused scenarios (on the replicas' side). */
const PAUSE_MS = 100;

/** How a client reads a turn's answer. */
type Reading = "json" | "stream" | "stream until [DONE]";

interface Scenario {
  readonly name: string;
  readonly reading: Reading;
  readonly pauseMs: number;
  /** Each turn is sent this many times, the next request on the other replica. */
  readonly sends: 1 | 2;
  /**
   * The request sent while Redis is frozen (answering nothing past the
   * deadline): it is budgeted from its replica's own layer, as in any
   * outage, and is not compared; every later one is.
   */
  readonly frozen?: number;
}

const SCENARIOS: readonly Scenario[] = [
  { name: "back to back", reading: "json", pauseMs: 0, sends: 1 },
  { name: "back to back, streamed", reading: "stream", pauseMs: 0, sends: 1 },
  {
    name: "back to back, streamed, closed at [DONE]",
    reading: "stream until [DONE]",
    pauseMs: 0,
    sends: 1,
  },
  { name: "with pauses", reading: "json", pauseMs: PAUSE_MS, sends: 1 },
  {
    name: "with pauses, streamed",
    reading: "stream",
    pauseMs: PAUSE_MS,
    sends: 1,
  },
  {
    name: "each turn sent again on the other replica",
    reading: "json",
    pauseMs: 0,
    sends: 2,
  },
  {
    name: "Redis frozen past the deadline during the fifth turn",
    reading: "json",
    pauseMs: 0,
    sends: 1,
    frozen: 4,
  },
];

/** What a response said of its budget. */
interface Decision {
  readonly action: string | null;
  readonly source: string | null;
  readonly promptTokens: string | null;
  readonly maxTokens: string | null;
}

/** Sends one request to `url`; its decision headers and the assistant's reply. */
async function send(
  url: string,
  messages: readonly unknown[],
  reading: Reading,
): Promise<{ decision: Decision; reply: string }> {
  const streamed = reading !== "json";
  const response = await fetch(`${url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      model: "m",
      messages,
      max_tokens: 4096,
      ...(streamed
        ? { stream: true, stream_options: { include_usage: true } }
        : {}),
    }),
  });
  const text = reading === "stream until [DONE]"
    ? await untilDone(response)
    : await response.text();
  strictEqual(response.status, 200, text);
  const decision = {
    action: response.headers.get("x-incontext-action"),
    source: response.headers.get("x-incontext-source"),
    promptTokens: response.headers.get("x-incontext-prompt-tokens"),
    maxTokens: response.headers.get("x-incontext-max-tokens"),
  };
  return {
    decision,
    reply: streamed
      ? streamedReply(text)
      : JSON.parse(text).choices[0].message.content,
  };
}

/**
 * Reads an event stream up to its `[DONE]` event and closes it there, as
 * OpenAI's Python SDK does (`Stream.__stream__` breaks at `[DONE]`, then
 * closes the response).
 */
async function untilDone(response: Response): Promise<string> {
  const reader = response.body!.pipeThrough(new TextDecoderStream())
    .getReader();
  let text = "";
  while (!text.includes("data: [DONE]")) {
    const { value, done } = await reader.read();
    if (done) break;
    text += value;
  }
  await reader.cancel();
  return text;
}

/** The assistant's text of an event stream, as a client joins its deltas. */
function streamedReply(text: string): string {
  let reply = "";
  for (const line of text.split("\n")) {
    if (!line.startsWith("data: ") || line === "data: [DONE]") continue;
    reply += JSON.parse(line.slice(6)).choices[0]?.delta?.content ?? "";
  }
  return reply;
}

/** What a conversation's side does around the request sent while Redis is frozen. */
interface Freezer {
  freeze(): void;
  /** Lets Redis run again, and waits until it has answered every call. */
  thaw(): Promise<void>;
}

/**
 * Runs one conversation of {@linkcode TURNS} turns, request i on
 * `urls[i % urls.length]`, each turn going on with the last reply it got;
 * returns each request's decision.
 */
async function converse(
  urls: readonly string[],
  tag: string,
  { reading, sends, frozen }: Scenario,
  { pauseMs, freezer }: { pauseMs: number; freezer?: Freezer },
): Promise<Decision[]> {
  const messages: { role: string; content: string }[] = [];
  const decisions: Decision[] = [];
  for (let turn = 0; turn < TURNS; turn++) {
    if (turn > 0 && pauseMs > 0) {
      await new Promise((resolve) => setTimeout(resolve, pauseMs));
    }
    messages.push({
      role: "user",
      content: `${tag}: step ${turn + 1}, read the file and say what it does`,
    });
    let reply = "";
    for (let attempt = 0; attempt < sends; attempt++) {
      const freezing = decisions.length === frozen ? freezer : undefined;
      freezing?.freeze();
      try {
        const answer = await send(
          urls[decisions.length % urls.length]!,
          messages,
          reading,
        );
        decisions.push(answer.decision);
        reply = answer.reply;
      } finally {
        await freezing?.thaw();
      }
    }
    messages.push({ role: "assistant", content: reply });
  }
  return decisions;
}

/**
 * A fake vLLM whose reply to a request it has seen before is longer than
 * the first: a turn sent again costs another number of completion tokens.
 */
function upstreamAnsweringAgainLonger() {
  const seen = new Map<string, number>();
  return serveFakeUpstream({
    maxModelLen: 65536,
    reply: (body) => {
      const key = JSON.stringify(body.messages);
      const attempt = (seen.get(key) ?? 0) + 1;
      seen.set(key, attempt);
      return attempt === 1
        ? "Noted."
        : `Noted again (attempt ${attempt}), at more length than the first time.`;
    },
  });
}

const ENV = {
  INCONTEXT_BACKEND: "anchored",
  INCONTEXT_CONTEXT_LENGTH: "65536",
  INCONTEXT_COMPRESSION_WINDOW_TOKENS: "60000",
};

/** Each replica's `/incontext/healthz` detail of its shared store. */
function stores(urls: readonly string[]) {
  return Promise.all(urls.map(async (url) => {
    const health = await (await fetch(`${url}/incontext/healthz`)).json();
    return health.sharedStore as { state: string; pending: number };
  }));
}

/** Waits until `done` holds of every replica's store, checking after each answer. */
async function untilStores(
  urls: readonly string[],
  done: (store: { state: string; pending: number }) => boolean,
): Promise<void> {
  for (let attempt = 0; attempt < 400; attempt++) {
    if ((await stores(urls)).every(done)) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error("the replicas' stores never settled");
}

Deno.test("two replicas sharing a Redis store budget an alternating conversation as one replica does", async (t) => {
  await using redis = await startRedisServer();
  // One upstream a side, so that each sees its conversation's sends alike.
  await using upstreamAlone = await upstreamAnsweringAgainLonger();
  await using upstreamPair = await upstreamAnsweringAgainLonger();
  await using alone = await startReplicas({
    count: 1,
    upstream: upstreamAlone.url,
    env: ENV,
  });
  await using pair: Replicas = await startReplicas({
    count: 2,
    upstream: upstreamPair.url,
    env: {
      ...ENV,
      INCONTEXT_SHARED_STORE: redis.url,
      // The store's speed is not what this test is about: a call past the
      // deadline is an outage by design, and a loaded test machine must not
      // make one.
      INCONTEXT_SHARED_TIMEOUT_MS: "1000",
    },
  });
  await untilStores(pair.urls, (store) => store.state === "up");
  const freezer: Freezer = {
    freeze: () => redis.freeze(),
    async thaw() {
      redis.resume();
      await untilStores(pair.urls, (store) => store.pending === 0);
    },
  };
  for (const scenario of SCENARIOS) {
    await t.step(
      `${scenario.name}: every request as on one replica`,
      async () => {
        const differ: string[] = [];
        for (let run = 1; run <= RUNS; run++) {
          const tag = `${scenario.name}, run ${run}`;
          // The reference needs no pause: one replica has nothing to wait for.
          const reference = await converse(alone.urls, tag, scenario, {
            pauseMs: 0,
          });
          const alternating = await converse(pair.urls, tag, scenario, {
            pauseMs: scenario.pauseMs,
            freezer,
          });
          alternating.forEach((decision, i) => {
            if (i === scenario.frozen) return;
            const expected = JSON.stringify(reference[i]);
            if (JSON.stringify(decision) !== expected) {
              differ.push(
                `run ${run} request ${i + 1}: ${
                  JSON.stringify(decision)
                }, alone ${expected}`,
              );
            }
          });
        }
        deepStrictEqual(differ, [], `${differ.length} requests differ`);
      },
    );
  }
});

/** Holds this thread, as a long synchronous task would, until `done()`. */
function holdThread(done: () => boolean): void {
  while (!done()) {
    // Busy: nothing else on this thread runs meanwhile.
  }
}

/** How many `MGET` calls redis-server has run, asked on a connection of its own. */
function mgetCalls(redis: RedisServer): number {
  const { stdout } = new Deno.Command("redis-cli", {
    args: ["-p", String(redis.port), "INFO", "commandstats"],
  }).outputSync();
  const line = new TextDecoder().decode(stdout).match(
    /cmdstat_mget:calls=(\d+)/,
  );
  return line === null ? 0 : Number(line[1]);
}

Deno.test("SharedStore takes an answer Redis gave in time while its thread was held past the deadline", async () => {
  await using redis = await startRedisServer();
  await using store = new SharedStore({
    connection: await redisConnection(redis.url),
    timeoutMs: 5,
    ttlSeconds: 60,
  });
  while (store.status().state !== "up") {
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  for (let i = 0; i < 5; i++) {
    const before = mgetCalls(redis);
    const start = performance.now();
    const reading = store.read("anchor", ["incontext:v1:anchor:none"]);
    // Held until Redis has run the MGET (its reply goes out before the
    // answer to INFO that says so) and past the deadline.
    holdThread(() =>
      mgetCalls(redis) > before && performance.now() - start > 20
    );
    deepStrictEqual(await reading, [null]);
  }
  strictEqual(store.errors.value({ kind: "anchor", reason: "timeout" }), 0);
  strictEqual(store.status().state, "up");
});

Deno.test("SharedStore writes while Redis answers past the deadline, and its late answer lets the next lookup try at once", async () => {
  await using redis = await startRedisServer();
  await using store = new SharedStore({
    connection: await redisConnection(redis.url),
    timeoutMs: 5,
    ttlSeconds: 60,
  });
  while (store.status().state !== "up") {
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  const key = "incontext:v1:anchor:late";
  // Redis answers nothing until it runs again: the lookup is abandoned at
  // its deadline, and the store is down for this client.
  redis.freeze();
  try {
    strictEqual(await store.read("anchor", [key]), undefined);
    strictEqual(store.status().state, "down");
    // A record written now is not lost to the outage.
    store.write("anchor", key, "v");
  } finally {
    redis.resume();
  }
  while (store.status().pending > 0) {
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  // Within the retry interval, the lookup goes, and finds the record.
  deepStrictEqual(await store.read("anchor", [key]), ["v"]);
  strictEqual(store.status().state, "up");
  strictEqual(store.errors.value({ kind: "anchor", reason: "unavailable" }), 0);
});
