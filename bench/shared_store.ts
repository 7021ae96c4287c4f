/**
 * What the shared store costs, against Debian's redis-server on the
 * loopback: the added time of a request's shared-store lookups (the anchor
 * prefetch, an MGET of the request's last prefixes not held locally; the
 * count cache's second tier, a one-key MGET on a local miss), the bytes a
 * record takes in Redis, and the throughput of three replicas against one,
 * each behind the same round-robin front, with 32 agents whose
 * conversations rotate over the replicas (anchored backend, fake upstream).
 * Every loop is bounded in count and in time.
 *
 *     deno run -A bench/shared_store.ts
 */
import { Redis } from "ioredis";
import { serveFakeUpstream } from "../src/testing/mod.ts";
import { redisConnection } from "../src/replicas/connection.ts";
import { SharedStore } from "../src/replicas/store.ts";
import { SharedAnchorStore } from "../src/replicas/anchors.ts";
import { sharedCountTier } from "../src/replicas/count_tier.ts";
import { startRedisServer } from "../tests/conformance/_redis_server.ts";
import { startReplicas } from "../tests/conformance/_replicas.ts";
import { percentile, printMachine, printTable } from "./_proxy_bench_setup.ts";

const LOOKUPS = 3000;
const AGENTS = 32;
const TURNS = 6;
const MAX_SECONDS = 6;

printMachine();
await using redis = await startRedisServer();

/** A conversation of `turns` user turns and replies, then one more user turn. */
function conversation(id: number, turns: number): unknown[] {
  const messages: unknown[] = [{
    role: "system",
    content: "You are an agent.",
  }];
  for (let t = 0; t < turns; t++) {
    messages.push({ role: "user", content: `task ${id}: step ${t}` });
    messages.push({ role: "assistant", content: `done with step ${t}` });
  }
  messages.push({ role: "user", content: `task ${id}: next` });
  return messages;
}

async function lookups(): Promise<void> {
  const open = async () =>
    new SharedStore({
      connection: await redisConnection(redis.url),
      timeoutMs: 1000,
      ttlSeconds: 600,
    });
  await using a = await open();
  await using b = await open();
  while (a.status().state !== "up" || b.status().state !== "up") {
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  // Replica A records each conversation's previous turn; replica B, whose
  // local layer holds none of them, fetches it.
  const writer = new SharedAnchorStore({ shared: a });
  const reader = new SharedAnchorStore({ shared: b, maxEntries: 16 });
  const requests = Array.from({ length: 512 }, (_, i) => {
    const messages = conversation(i, 10);
    writer.record("m\nnull", messages.slice(0, -2), {
      promptTokens: 4000,
      completionTokens: 100,
    });
    return { model: "m", messages };
  });
  const tier = sharedCountTier(b);
  tier.set("bench-count", 1705);
  await b.read("count", ["sync"]);
  const prefetch: number[] = [];
  const count: number[] = [];
  const deadline = performance.now() + MAX_SECONDS * 1000;
  for (let i = 0; i < LOOKUPS && performance.now() < deadline; i++) {
    let start = performance.now();
    await reader.prefetch(requests[i % requests.length]!);
    prefetch.push(performance.now() - start);
    start = performance.now();
    await tier.get(i % 2 === 0 ? "bench-count" : `missing-${i}`);
    count.push(performance.now() - start);
  }
  const row = (name: string, samples: number[]) => [
    name,
    String(samples.length),
    `${(percentile(samples, 0.5) * 1000).toFixed(0)} µs`,
    `${(percentile(samples, 0.99) * 1000).toFixed(0)} µs`,
  ];
  printTable(["lookup (loopback)", "n", "p50", "p99"], [
    row("anchor prefetch (21 messages, MGET of 2 keys)", prefetch),
    row("count tier (MGET of 1 key, half hits)", count),
  ]);
}

async function memory(): Promise<void> {
  const client = new Redis(redis.url);
  try {
    await client.flushall();
    const before = Number(
      /used_memory:(\d+)/.exec(await client.info("memory"))![1],
    );
    const shared = new SharedStore({
      connection: await redisConnection(redis.url),
      timeoutMs: 1000,
      ttlSeconds: 600,
    });
    while (shared.status().state !== "up") {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    const anchors = new SharedAnchorStore({ shared, maxEntries: 1 });
    const tier = sharedCountTier(shared);
    for (let i = 0; i < 10_000; i++) {
      anchors.record("m\nnull", conversation(i, 5), {
        promptTokens: 123_456,
        completionTokens: 1_234,
      });
      tier.set(`${i}`.padStart(64, "0"), 123_456);
      // Writes go on alone, at most 256 at once: wait for each batch.
      if (i % 100 === 99) await shared.read("count", ["sync"]);
    }
    await shared.read("count", ["sync"]);
    await shared[Symbol.asyncDispose]();
    const after = Number(
      /used_memory:(\d+)/.exec(await client.info("memory"))![1],
    );
    const [anchorKey] = await client.keys("incontext:v1:anchor:*");
    const [countKey] = await client.keys("incontext:v1:count:*");
    printTable([
      "record",
      "MEMORY USAGE of one",
      "used_memory per record (20,000 records)",
    ], [
      [
        "anchor",
        `${await client.call("MEMORY", "USAGE", anchorKey!)} B`,
        `${Math.round((after - before) / 20_000)} B (both kinds)`,
      ],
      ["count", `${await client.call("MEMORY", "USAGE", countKey!)} B`, ""],
    ]);
  } finally {
    client.disconnect();
  }
}

async function throughput(
  replicas: number,
  shared: boolean,
): Promise<number> {
  await using upstream = await serveFakeUpstream({ maxModelLen: 10_000_000 });
  await using fleet = await startReplicas({
    count: replicas,
    upstream: upstream.url,
    env: {
      INCONTEXT_BACKEND: "anchored",
      INCONTEXT_CONTEXT_LENGTH: "10000000",
      INCONTEXT_COMPRESSION_WINDOW_TOKENS: "9000000",
      ...(shared
        ? {
          INCONTEXT_SHARED_STORE: redis.url,
          INCONTEXT_SHARED_TIMEOUT_MS: "50",
        }
        : {}),
    },
  });
  const deadline = performance.now() + MAX_SECONDS * 1000;
  let requests = 0;
  const start = performance.now();
  await Promise.all(Array.from({ length: AGENTS }, async (_, agent) => {
    for (let round = 0; performance.now() < deadline; round++) {
      const messages: unknown[] = [];
      for (let turn = 0; turn < TURNS && performance.now() < deadline; turn++) {
        messages.push({
          role: "user",
          content: `agent ${agent}/${round}: ${turn}`,
        });
        const response = await fetch(`${fleet.front}/v1/chat/completions`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ model: "m", messages, max_tokens: 64 }),
        });
        const body = await response.json();
        messages.push(body.choices[0].message);
        requests++;
      }
    }
  }));
  return requests / ((performance.now() - start) / 1000);
}

await lookups();
console.log();
await memory();
console.log();
const alone = await throughput(1, false);
const one = await throughput(1, true);
const three = await throughput(3, true);
printTable(["replicas behind the front", "requests/s"], [
  ["1, no shared store", alone.toFixed(0)],
  ["1, shared store", one.toFixed(0)],
  ["3, shared store", three.toFixed(0)],
]);
