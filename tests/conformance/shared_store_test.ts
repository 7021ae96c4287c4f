/**
 * Replicas of `incontext serve` sharing a real Redis (Debian's
 * redis-server): an agent's conversation rotating over three replicas keeps
 * its anchor on every turn, a count made by one is a hit on another, and a
 * store that is killed, restarted or paused costs no request.
 */
import { ok, strictEqual } from "node:assert/strict";
import { Redis } from "ioredis";
import { serveFakeUpstream } from "../../src/testing/mod.ts";
import { redisConnection } from "../../src/replicas/connection.ts";
import { SharedStore } from "../../src/replicas/store.ts";
import {
  anchorRecordKey,
  decodeCount,
  encodeCount,
} from "../../src/replicas/records.ts";
import { AnchorStore } from "../../src/anchors/store.ts";
import { startRedisServer } from "./_redis_server.ts";
import { until } from "../_kit/hang.ts";
import { metric, type Replicas, startReplicas } from "./_replicas.ts";

/** Every prompt costs 1000 tokens a message: an anchored count shows it, an estimate does not. */
const PER_MESSAGE = 1000;

/** One agent conversation: each turn appends a user message and the reply. */
class Conversation {
  readonly messages: { role: string; content: string }[] = [];
  readonly #name: string;
  #turn = 0;

  constructor(name: string) {
    this.#name = name;
  }

  /** Sends the next turn through `url`; what the proxy counted and who served it. */
  async next(url: string): Promise<{ promptTokens: number; replica: string }> {
    this.messages.push({
      role: "user",
      content: `${this.#name}: step ${++this.#turn} of the task`,
    });
    const response = await fetch(`${url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        model: "m",
        messages: this.messages,
        max_tokens: 64,
      }),
    });
    strictEqual(response.status, 200, await response.clone().text());
    const body = await response.json();
    this.messages.push({
      role: "assistant",
      content: body.choices[0].message.content,
    });
    return {
      promptTokens: Number(response.headers.get("x-incontext-prompt-tokens")),
      replica: response.headers.get("x-test-replica") ?? url,
    };
  }

  /**
   * The count of the turn just sent used the previous turn's anchor: at
   * least that turn's prompt (all messages but the last reply and request).
   */
  anchoredOnLastTurn(promptTokens: number): boolean {
    return promptTokens >= PER_MESSAGE * (this.messages.length - 3);
  }
}

/** Each replica's log: what it printed on both streams. */
function logOf(replicas: Replicas, index: number): string {
  const p = replicas.processes[index]!;
  return p.stdout.text + p.stderr.text;
}

function outages(replicas: Replicas, index: number): number {
  return logOf(replicas, index).split("shared store unavailable").length - 1;
}

/** Sends a throwaway turn to every replica until each reports its store `up`. */
async function untilStoresAnswer(replicas: Replicas): Promise<void> {
  for (let attempt = 0; attempt < 100; attempt++) {
    const states = await Promise.all(replicas.urls.map(async (url) => {
      await new Conversation("probe").next(url);
      const health = await (await fetch(`${url}/incontext/healthz`)).json();
      return health.sharedStore.state;
    }));
    if (states.every((state) => state === "up")) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error("the replicas never reached the store again");
}

Deno.test("replicas sharing a Redis store keep a rotating conversation anchored", async (t) => {
  await using redis = await startRedisServer();
  await using upstream = await serveFakeUpstream({
    maxModelLen: 10_000_000,
    countTokens: (body) =>
      PER_MESSAGE *
      (Array.isArray(body.messages) ? body.messages.length : 1),
  });
  await using replicas = await startReplicas({
    count: 3,
    upstream: upstream.url,
    env: {
      INCONTEXT_BACKEND: "anchored",
      INCONTEXT_CONTEXT_LENGTH: "10000000",
      INCONTEXT_COMPRESSION_WINDOW_TOKENS: "9000000",
      INCONTEXT_SHARED_STORE: redis.url,
      // Generous: a loaded test machine must not turn a lookup into an outage.
      INCONTEXT_SHARED_TIMEOUT_MS: "250",
      INCONTEXT_ANCHOR_ENTRIES: "20",
    },
  });
  await untilStoresAnswer(replicas);
  const agent = new Conversation("agent");

  await t.step(
    "each turn lands on another replica and is anchored on the last one",
    async () => {
      let previous = (await agent.next(replicas.front)).replica;
      for (let turn = 2; turn <= 7; turn++) {
        const { promptTokens, replica } = await agent.next(replicas.front);
        ok(replica !== previous, `turn ${turn} on another replica`);
        ok(
          agent.anchoredOnLastTurn(promptTokens),
          `turn ${turn}: ${promptTokens} tokens, not anchored on turn ${
            turn - 1
          }`,
        );
        previous = replica;
      }
    },
  );

  await t.step("each replica's own layer stays within its bound", async () => {
    for (let i = 0; i < 45; i++) {
      const conversation = new Conversation(`chat ${i}`);
      await conversation.next(replicas.front);
      await conversation.next(replicas.front);
    }
    for (const url of replicas.urls) {
      const entries = await metric(url, "incontext_anchor_entries");
      ok(entries <= 20, `${url}: ${entries} anchors`);
      ok(entries >= 15, `${url}: ${entries} anchors`);
    }
    const client = new Redis(redis.url);
    try {
      ok(Number(await client.dbsize()) >= 90);
    } finally {
      client.disconnect();
    }
  });

  await t.step(
    "a record of another version in the store is ignored and counted",
    async () => {
      const client = new Redis(redis.url);
      try {
        const first = {
          role: "user",
          content: "a conversation begun elsewhere",
        };
        // The anchor key of a one-message conversation of model "m", no tools.
        const digest = new AnchorStore().keys("m\nnull", [first]).full;
        await client.set(
          anchorRecordKey(digest),
          JSON.stringify({ v: 2, p: 999_999, c: 0, n: 1 }),
        );
        const url = replicas.urls[0]!;
        const series =
          'incontext_shared_store_errors_total{kind="anchor",reason="invalid"}';
        const before = await metric(url, series);
        const response = await fetch(`${url}/v1/chat/completions`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({
            model: "m",
            messages: [first, { role: "assistant", content: "ok" }, {
              role: "user",
              content: "go on",
            }],
            max_tokens: 64,
          }),
        });
        strictEqual(response.status, 200);
        await response.body?.cancel();
        ok(Number(response.headers.get("x-incontext-prompt-tokens")) < 1000);
        strictEqual(await metric(url, series), before + 1);
      } finally {
        client.disconnect();
      }
    },
  );

  await t.step(
    "a paused store: lookups are abandoned at the deadline, no request fails",
    async () => {
      const admin = new Redis(redis.url);
      const other = new Redis(redis.url);
      try {
        await other.ping();
        const before = await Promise.all(
          replicas.urls.map((url) =>
            metric(
              url,
              'incontext_shared_store_errors_total{kind="anchor",reason="timeout"}',
            )
          ),
        );
        strictEqual(await admin.call("CLIENT", "PAUSE", "4000", "ALL"), "OK");
        // Answered only once the pause is over.
        let paused = true;
        const resumed = other.ping().then(() => paused = false);
        for (let turn = 0; turn < 3; turn++) await agent.next(replicas.front);
        ok(paused, "the turns finished while the store was still paused");
        const after = await Promise.all(
          replicas.urls.map((url) =>
            metric(
              url,
              'incontext_shared_store_errors_total{kind="anchor",reason="timeout"}',
            )
          ),
        );
        ok(
          after.every((value, i) => value >= before[i]! + 1),
          `timeouts ${before} -> ${after}`,
        );
        await resumed;
      } finally {
        admin.disconnect();
        other.disconnect();
      }
      await untilStoresAnswer(replicas);
    },
  );

  await t.step(
    "the store killed mid-run and restarted: no request fails, anchors come back",
    async () => {
      const logged = replicas.urls.map((_, i) => outages(replicas, i));
      await redis.kill();
      for (let turn = 0; turn < 6; turn++) await agent.next(replicas.front);
      for (const [i, url] of replicas.urls.entries()) {
        const health = await (await fetch(`${url}/incontext/healthz`)).json();
        strictEqual(health.sharedStore.state, "down");
        // The replica writes its log from a buffer: the line comes shortly.
        await until(
          () => outages(replicas, i) > logged[i]!,
          `replica ${i}'s outage line`,
        );
        // Once per outage, not once per request.
        strictEqual(outages(replicas, i), logged[i]! + 1, logOf(replicas, i));
      }
      await redis.restart();
      await untilStoresAnswer(replicas);
      // The first turn records into the empty store; every next one finds it.
      await agent.next(replicas.front);
      for (let turn = 0; turn < 4; turn++) {
        const { promptTokens } = await agent.next(replicas.front);
        ok(agent.anchoredOnLastTurn(promptTokens), `${promptTokens} tokens`);
      }
    },
  );
});

/** Two replicas counting with the fake's /tokenize, sharing `store`, once both reach it. */
async function twoReplicas(
  store: string,
  upstream: { readonly url: string; readonly tokenizeUrl: string },
  env: Record<string, string> = {},
): Promise<Replicas> {
  const replicas = await startReplicas({
    count: 2,
    upstream: upstream.url,
    env: {
      INCONTEXT_TOKENIZER_URL: upstream.tokenizeUrl,
      INCONTEXT_CONTEXT_LENGTH: "65536",
      INCONTEXT_COMPRESSION_WINDOW_TOKENS: "55705",
      INCONTEXT_SHARED_STORE: store,
      INCONTEXT_SHARED_TIMEOUT_MS: "250",
      ...env,
    },
  });
  await untilStoresAnswer(replicas);
  return replicas;
}

Deno.test("a count made by one replica is a hit on another; a replica stops cleanly while the store is down", async () => {
  await using redis = await startRedisServer();
  await using upstream = await serveFakeUpstream({ maxModelLen: 65536 });
  await using replicas = await twoReplicas(redis.url, upstream);
  const tokenizes = () =>
    upstream.requests.filter((r) => r.path === "/tokenize").length;
  const request = {
    model: "m",
    messages: [{ role: "user", content: "Count me once for the whole fleet" }],
    max_tokens: 100,
  };
  const answers = [];
  for (const url of replicas.urls) {
    const before = tokenizes();
    const response = await fetch(`${url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(request),
    });
    strictEqual(response.status, 200);
    await response.body?.cancel();
    answers.push({
      tokens: response.headers.get("x-incontext-prompt-tokens"),
      counted: tokenizes() - before,
    });
  }
  strictEqual(answers[0]!.counted, 1);
  strictEqual(answers[1]!.counted, 0);
  strictEqual(answers[1]!.tokens, answers[0]!.tokens);
  // A replica stopped while its store is down still stops cleanly.
  await redis.kill();
  const response = await fetch(`${replicas.urls[0]}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      ...request,
      messages: [{ role: "user", content: "x" }],
    }),
  });
  strictEqual(response.status, 200);
  await response.body?.cancel();
  const replica = replicas.processes[0]!;
  replica.child.kill("SIGTERM");
  strictEqual((await replica.child.status).code, 0);
});

Deno.test("two replicas writing the same key at once leave a valid record", async () => {
  await using redis = await startRedisServer();
  const open = async () =>
    new SharedStore({
      connection: await redisConnection(redis.url),
      timeoutMs: 1000,
      ttlSeconds: 60,
    });
  await using a = await open();
  await using b = await open();
  const client = new Redis(redis.url);
  try {
    await client.ping();
    while (a.status().state !== "up" || b.status().state !== "up") {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    for (let i = 0; i < 200; i++) {
      a.write("count", "incontext:v1:count:same", encodeCount(i));
      b.write("count", "incontext:v1:count:same", encodeCount(1000 + i));
    }
    // Both connections' writes are in order: a read after them sees the last.
    await Promise.all([a.read("count", ["x"]), b.read("count", ["x"])]);
    const count = decodeCount(await client.get("incontext:v1:count:same"));
    ok(count === 199 || count === 1199, String(count));
    ok(Number(await client.pttl("incontext:v1:count:same")) > 50_000);
  } finally {
    client.disconnect();
  }
});

Deno.test("replicas with INCONTEXT_SHARED_STORE_SECRET share signed counts and ignore a forged one", async () => {
  await using redis = await startRedisServer();
  await using upstream = await serveFakeUpstream({ maxModelLen: 65536 });
  await using replicas = await twoReplicas(redis.url, upstream, {
    INCONTEXT_SHARED_STORE_SECRET: "f".repeat(64),
  });
  const tokenizes = () =>
    upstream.requests.filter((r) => r.path === "/tokenize").length;
  const send = async (url: string, content: string) => {
    const before = tokenizes();
    const response = await fetch(`${url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        model: "m",
        messages: [{ role: "user", content }],
        max_tokens: 100,
      }),
    });
    strictEqual(response.status, 200);
    await response.body?.cancel();
    return {
      action: response.headers.get("x-incontext-action"),
      tokens: Number(response.headers.get("x-incontext-prompt-tokens")),
      counted: tokenizes() - before,
    };
  };
  const [a, b] = replicas.urls as [string, string];
  const shared = await send(a, "Signed for the whole fleet");
  strictEqual(shared.counted, 1);
  const hit = await send(b, "Signed for the whole fleet");
  strictEqual(hit.counted, 0, "the signed count is a hit on the other replica");
  strictEqual(hit.tokens, shared.tokens);

  // Anyone who can write to Redis rewrites every count as a huge one.
  const counted = await send(a, "Poison me");
  const client = new Redis(redis.url);
  try {
    const keys = await client.keys("incontext:v1:count:*");
    ok(keys.length >= 2);
    for (const key of keys) {
      ok((await client.get(key))!.includes("."), "stored signed");
      await client.set(key, encodeCount(60_000), "PX", 60_000);
    }
  } finally {
    client.disconnect();
  }
  const forged = await send(b, "Poison me");
  strictEqual(forged.action, "set", "not made to compress");
  strictEqual(forged.tokens, counted.tokens);
  strictEqual(forged.counted, 1, "counted again instead");
  strictEqual(
    await metric(
      b,
      'incontext_shared_store_errors_total{kind="count",reason="unauthenticated"}',
    ),
    1,
  );
});
