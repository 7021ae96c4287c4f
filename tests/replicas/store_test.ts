// Covers: src/replicas/store.ts, src/replicas/records.ts, src/replicas/record_mac.ts, src/replicas/anchors.ts, src/replicas/count_tier.ts
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import { AnchorStore } from "../../src/anchors/store.ts";
import { createCountCache } from "../../src/cache/mod.ts";
import { attachCountTier } from "../../src/cache/capability.ts";
import { loadConfig } from "../../src/config/mod.ts";
import { ConfigError } from "../../src/core/config_error.ts";
import { sharedCountTier } from "../../src/replicas/count_tier.ts";
import {
  anchorRecordKey,
  countRecordKey,
  decodeAnchor,
  decodeCount,
  encodeAnchor,
  encodeCount,
} from "../../src/replicas/records.ts";
import { SharedAnchorStore } from "../../src/replicas/anchors.ts";
import { SharedStore } from "../../src/replicas/store.ts";
import { captureLogs } from "../_kit/log_capture.ts";
import { FakeStoreServer } from "../_kit/fake_store.ts";
import { answeringThread } from "../_kit/answering_thread.ts";

const URL_ENV = { INCONTEXT_TOKENIZER_URL: "http://127.0.0.1:8000/tokenize" };

/** A store over `server` whose clock the test moves. */
function storeOn(
  server: FakeStoreServer,
  clock = { now: 0 },
  timeoutMs = 5,
): SharedStore {
  return new SharedStore({
    connection: server.connect(),
    timeoutMs,
    ttlSeconds: 60,
    retryMs: 1000,
    maxPending: 4,
    now: () => clock.now,
  });
}

/** Resolves once every store over `server` has seen its connection ready. */
function ready(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 0));
}

const turn1 = [{ role: "user", content: "Plan the trip" }];
const turn2 = [
  ...turn1,
  { role: "assistant", content: "Where to?" },
  { role: "user", content: "Lisbon" },
];

Deno.test("records: encode and decode", async (t) => {
  await t.step(
    "an anchor reads back as written, for its own length only",
    () => {
      const text = encodeAnchor({
        promptTokens: 9,
        completionTokens: 4,
        length: 3,
      });
      deepStrictEqual(decodeAnchor(text, 3), {
        promptTokens: 9,
        completionTokens: 4,
        length: 3,
      });
      strictEqual(decodeAnchor(text, 2), "invalid");
      strictEqual(decodeAnchor(null, 3), undefined);
    },
  );
  await t.step("a count reads back as written", () => {
    strictEqual(decodeCount(encodeCount(1705)), 1705);
    strictEqual(decodeCount(null), undefined);
  });
  await t.step("another version or shape is invalid, never misread", () => {
    for (
      const text of [
        '{"v":0,"t":5}',
        '{"v":2,"t":5}',
        '{"t":5}',
        '{"v":1,"t":-1}',
        '{"v":1,"t":1.5}',
        '{"v":1,"t":"5"}',
        '{"v":1,"t":5,"x":1}',
        "[1,5]",
        "5",
        "not json",
      ]
    ) {
      strictEqual(decodeCount(text), "invalid", text);
    }
    strictEqual(decodeAnchor('{"v":1,"p":9,"c":4}', 3), "invalid");
  });
  await t.step("keys carry the format's version", () => {
    ok(anchorRecordKey("ab").startsWith("incontext:v1:anchor:"));
    ok(countRecordKey("ab").startsWith("incontext:v1:count:"));
  });
});

Deno.test("AnchorStore.prefixKeys() gives the keys AnchorStore records and looks up", () => {
  const store = new AnchorStore();
  const model = "m\nnull";
  store.record(model, turn1, { promptTokens: 9, completionTokens: 4 });
  const keys = store.keys(model, turn2);
  const digests = new AnchorStore().prefixKeys(model, turn2, 1);
  deepStrictEqual(digests.map(([length]) => length), [1, 2, 3]);
  strictEqual(digests[2]![1], keys.full);
  deepStrictEqual(keys.prefixes[0], digests[0]);
  deepStrictEqual(store.prefixKeys(model, turn2, 3), [digests[2]]);
});

Deno.test("SharedAnchorStore: an anchor recorded by one replica is found by another", async () => {
  const server = new FakeStoreServer();
  await using sharedA = storeOn(server);
  await using sharedB = storeOn(server);
  await ready();
  const a = new SharedAnchorStore({ shared: sharedA });
  const b = new SharedAnchorStore({ shared: sharedB });
  const model = "m\nnull";
  a.record(model, turn1, { promptTokens: 9, completionTokens: 4 });
  await ready();
  strictEqual(b.lookup(model, turn2), undefined);
  await b.prefetch({ model: "m", messages: turn2 });
  deepStrictEqual(b.lookup(model, turn2), {
    promptTokens: 9,
    completionTokens: 4,
    prefixLength: 1,
  });
  strictEqual(server.ttls.values().next().value, 60_000);
  // Nothing but numbers is stored.
  for (const text of server.records.values()) {
    ok(!text.includes("Plan") && !text.includes("trip"), text);
  }
});

Deno.test("SharedAnchorStore.prefetch() takes the record another replica wrote last over its own of the same prefix", async () => {
  const server = new FakeStoreServer();
  await using sharedA = storeOn(server);
  await using sharedB = storeOn(server);
  await ready();
  const a = new SharedAnchorStore({ shared: sharedA });
  const b = new SharedAnchorStore({ shared: sharedB });
  const model = "m\nnull";
  // Turn 1 answered by A, then sent again to B, whose reply is longer.
  a.record(model, turn1, { promptTokens: 9, completionTokens: 4 });
  await ready();
  await b.prefetch({ model: "m", messages: turn1 });
  b.record(model, turn1, { promptTokens: 9, completionTokens: 11 });
  await ready();
  // The conversation goes on with B's reply, on A.
  await a.prefetch({ model: "m", messages: turn2 });
  deepStrictEqual(a.lookup(model, turn2), {
    promptTokens: 9,
    completionTokens: 11,
    prefixLength: 1,
  });
  strictEqual(a.size, 1);
});

Deno.test("SharedAnchorStore.prefetch() ignores a record of another shape and counts it", async () => {
  const server = new FakeStoreServer();
  await using shared = storeOn(server);
  await ready();
  const digest = new AnchorStore().keys("m\nnull", turn1).full;
  server.records.set(anchorRecordKey(digest), '{"v":1,"p":-3,"c":4,"n":1}');
  const store = new SharedAnchorStore({ shared });
  await store.prefetch({ model: "m", messages: turn2 });
  strictEqual(store.size, 0);
  strictEqual(shared.errors.value({ kind: "anchor", reason: "invalid" }), 1);
});

Deno.test("SharedStore never holds a request past its deadline", async (t) => {
  await using logs = await captureLogs();
  const server = new FakeStoreServer();
  const clock = { now: 0 };
  await using shared = storeOn(server, clock, 2);
  await ready();
  await t.step(
    "a hung store: the call is abandoned at the deadline, the outage logged once",
    async () => {
      server.mode = "hang";
      strictEqual(await shared.read("count", ["k"]), undefined);
      strictEqual(shared.errors.value({ kind: "count", reason: "timeout" }), 1);
      strictEqual(shared.status().state, "down");
      strictEqual(shared.status().error, "TimeoutError");
      // Later calls within the retry interval do not reach the store.
      const calls = server.calls;
      for (let i = 0; i < 5; i++) {
        strictEqual(await shared.read("count", ["k"]), undefined);
      }
      strictEqual(server.calls, calls);
      strictEqual(
        shared.errors.value({ kind: "count", reason: "unavailable" }),
        5,
      );
      strictEqual(
        logs.lines.filter((line) => line.includes("shared store unavailable"))
          .length,
        1,
      );
    },
  );
  await t.step(
    "after the retry interval one call tries again, and recovers",
    async () => {
      server.mode = "ok";
      server.release();
      server.records.set("k", "v");
      clock.now = 1000;
      deepStrictEqual(await shared.read("count", ["k"]), ["v"]);
      strictEqual(shared.status().state, "up");
      ok(
        logs.lines.some((line) => line.includes("shared store answers again")),
      );
    },
  );
  await t.step(
    "a failing store is an outage too, named by its error's type and code",
    async () => {
      server.mode = "fail";
      strictEqual(await shared.read("anchor", ["k"]), undefined);
      strictEqual(shared.errors.value({ kind: "anchor", reason: "error" }), 1);
      strictEqual(shared.status().state, "down");
      strictEqual(shared.status().error, "Error ECONNREFUSED");
    },
  );
  await t.step("the metrics name the errors and the lookups", () => {
    const text = shared.metricLines().join("\n");
    ok(
      text.includes(
        'incontext_shared_store_errors_total{kind="count",reason="timeout"} 1',
      ),
    );
    ok(text.includes("incontext_shared_store_lookup_seconds_bucket"));
    ok(text.includes('outcome="timeout"'));
    ok(text.includes('outcome="hit"'));
  });
});

Deno.test("SharedStore takes an answer that came while its thread was held past the deadline", async () => {
  await using thread = answeringThread("v");
  await using shared = new SharedStore({
    connection: thread.connection,
    timeoutMs: 5,
    ttlSeconds: 60,
  });
  await ready();
  for (let i = 0; i < 3; i++) {
    const start = performance.now();
    const sent = thread.sent();
    const reading = shared.read("anchor", ["k"]);
    // Held as a long synchronous task holds it: the answer is on its way,
    // and the deadline passes, before the loop runs again.
    while (thread.sent() === sent || performance.now() - start < 20) {
      // Busy: nothing else on this thread runs meanwhile.
    }
    deepStrictEqual(await reading, ["v"]);
  }
  strictEqual(shared.errors.value({ kind: "anchor", reason: "timeout" }), 0);
  strictEqual(shared.status().state, "up");
});

Deno.test("SharedStore writes while the store is down, and a write answered ends the outage", async () => {
  await using _logs = await captureLogs();
  const server = new FakeStoreServer();
  await using shared = storeOn(server);
  await ready();
  server.mode = "fail";
  strictEqual(await shared.read("anchor", ["k"]), undefined);
  strictEqual(shared.status().state, "down");
  server.mode = "ok";
  shared.write("anchor", "k", "v");
  await ready();
  strictEqual(server.records.get("k"), "v");
  strictEqual(shared.status().state, "up");
  strictEqual(
    shared.errors.value({ kind: "anchor", reason: "unavailable" }),
    0,
  );
});

Deno.test("SharedStore tries the store at once when a call abandoned at its deadline is answered after all", async () => {
  await using _logs = await captureLogs();
  const server = new FakeStoreServer();
  const clock = { now: 0 };
  await using shared = storeOn(server, clock);
  await ready();
  server.mode = "hang";
  strictEqual(await shared.read("anchor", ["k"]), undefined);
  strictEqual(shared.status().state, "down");
  strictEqual(await shared.read("anchor", ["k"]), undefined, "skipped");
  // The store answers, late: it is slow, not gone.
  server.mode = "ok";
  server.records.set("k", "v");
  server.answerHung();
  await ready();
  // Within the retry interval, the next lookup goes.
  deepStrictEqual(await shared.read("anchor", ["k"]), ["v"]);
  strictEqual(shared.status().state, "up");
});

Deno.test("SharedStore bounds the calls waiting on a hung store", async () => {
  const server = new FakeStoreServer();
  await using shared = storeOn(server, { now: 0 }, 10_000);
  await ready();
  server.mode = "hang";
  const reads = Array.from({ length: 6 }, () => shared.read("count", ["k"]));
  strictEqual(shared.status().pending, 4);
  strictEqual(shared.errors.value({ kind: "count", reason: "busy" }), 2);
  server.mode = "ok";
  server.release();
  await Promise.all(reads);
  strictEqual(shared.status().pending, 0);
});

Deno.test("sharedCountTier(): a count made through one cache is a hit through another", async () => {
  const server = new FakeStoreServer();
  await using sharedA = storeOn(server);
  await using sharedB = storeOn(server);
  await ready();
  await using cacheA = createCountCache({ inProcess: true });
  await using cacheB = createCountCache({ inProcess: true });
  ok(attachCountTier(cacheA, sharedCountTier(sharedA)));
  ok(attachCountTier(cacheB, sharedCountTier(sharedB)));
  let counted = 0;
  const count = () => Promise.resolve(++counted + 1700);
  strictEqual(await cacheA.getOrCount("key", count), 1701);
  await ready();
  strictEqual(await cacheB.getOrCount("key", count), 1701);
  strictEqual(counted, 1);
  server.records.set(countRecordKey("other"), '{"v":9,"t":1}');
  strictEqual(await cacheB.getOrCount("other", count), 1702);
  strictEqual(sharedB.errors.value({ kind: "count", reason: "invalid" }), 1);
});

Deno.test("loadConfig() reads the shared store's settings", async (t) => {
  await t.step("a redis or rediss URL, the TTL and the deadline", () => {
    const config = loadConfig({
      ...URL_ENV,
      INCONTEXT_SHARED_STORE: "rediss://:secret@cache.internal:6380/2",
      INCONTEXT_SHARED_TTL_SECONDS: "600",
      INCONTEXT_SHARED_TIMEOUT_MS: "20",
    });
    strictEqual(config.sharedStore, "rediss://:secret@cache.internal:6380/2");
    strictEqual(config.sharedTtlSeconds, 600);
    strictEqual(config.sharedTimeoutMs, 20);
    ok(!("sharedStore" in loadConfig(URL_ENV)));
  });
  await t.step("every bad value is named, never echoed", () => {
    try {
      loadConfig({
        ...URL_ENV,
        INCONTEXT_SHARED_STORE: "http://:secret@host:6379",
        INCONTEXT_SHARED_TTL_SECONDS: "0",
        INCONTEXT_SHARED_TIMEOUT_MS: "1.5",
      });
      throw new Error("expected a ConfigError");
    } catch (error) {
      ok(error instanceof ConfigError);
      deepStrictEqual(error.issues.map((issue) => issue.variable), [
        "INCONTEXT_SHARED_STORE",
        "INCONTEXT_SHARED_TTL_SECONDS",
        "INCONTEXT_SHARED_TIMEOUT_MS",
      ]);
      ok(!error.message.includes("secret"));
    }
    for (
      const url of ["redis://", "redis://h:1/x", "redis://h:1/0?a=1", "h:6379"]
    ) {
      try {
        loadConfig({ ...URL_ENV, INCONTEXT_SHARED_STORE: url });
        throw new Error(`expected ${url} to be refused`);
      } catch (error) {
        ok(error instanceof ConfigError, url);
      }
    }
  });
});

Deno.test("SharedStore.refresh() asks a store seen down, at most once per retry interval", async () => {
  const server = new FakeStoreServer();
  const clock = { now: 0 };
  await using shared = storeOn(server, clock);
  await ready();
  const calls = server.calls;
  await shared.refresh();
  strictEqual(server.calls, calls, "a store that is up is not asked");
  server.mode = "fail";
  strictEqual(await shared.read("count", ["k"]), undefined);
  strictEqual(shared.status().state, "down");
  server.mode = "ok";
  await shared.refresh();
  strictEqual(shared.status().state, "down", "within the retry interval");
  clock.now = 1000;
  await shared.refresh();
  strictEqual(shared.status().state, "up");
});

/** A store over `server` that signs with `secret`. */
function signedStoreOn(server: FakeStoreServer, secret: string): SharedStore {
  return new SharedStore({
    connection: server.connect(),
    timeoutMs: 5,
    ttlSeconds: 60,
    secret,
  });
}

const SECRET = "0123456789abcdef0123456789abcdef";

Deno.test("SharedStore with a secret trusts only the records it can authenticate", async (t) => {
  const server = new FakeStoreServer();
  await using a = signedStoreOn(server, SECRET);
  await using b = signedStoreOn(server, SECRET);
  await ready();
  const key = countRecordKey("k1");

  await t.step("a record one replica signed is read by another", async () => {
    a.write("count", key, encodeCount(1705));
    await ready();
    ok(server.records.get(key)!.endsWith(`.${encodeCount(1705)}`));
    deepStrictEqual(await b.read("count", [key]), [encodeCount(1705)]);
  });

  await t.step(
    "a record written to the store without the secret is ignored and counted",
    async () => {
      server.records.set(key, encodeCount(60000));
      deepStrictEqual(await b.read("count", [key]), [null]);
      strictEqual(
        b.errors.value({ kind: "count", reason: "unauthenticated" }),
        1,
      );
    },
  );

  await t.step("a genuine record moved to another key is ignored", async () => {
    a.write("count", countRecordKey("big"), encodeCount(60000));
    await ready();
    server.records.set(key, server.records.get(countRecordKey("big"))!);
    deepStrictEqual(await b.read("count", [key]), [null]);
  });

  await t.step(
    "a record signed with another secret, or altered, is ignored",
    async () => {
      await using other = signedStoreOn(server, SECRET.toUpperCase());
      await ready();
      other.write("count", key, encodeCount(7));
      await ready();
      deepStrictEqual(await b.read("count", [key]), [null]);
      a.write("count", key, encodeCount(7));
      await ready();
      server.records.set(key, server.records.get(key)!.replace("7", "9"));
      deepStrictEqual(await b.read("count", [key]), [null]);
      strictEqual(
        b.errors.value({ kind: "count", reason: "unauthenticated" }),
        4,
      );
    },
  );

  await t.step(
    "a replica without the secret reads a signed record as another shape",
    async () => {
      await using plain = storeOn(server);
      await ready();
      a.write("count", key, encodeCount(7));
      await ready();
      const tier = sharedCountTier(plain);
      strictEqual(await tier.get("k1"), undefined);
      strictEqual(plain.errors.value({ kind: "count", reason: "invalid" }), 1);
    },
  );
});

Deno.test("loadConfig() reads INCONTEXT_SHARED_STORE_SECRET", async (t) => {
  await t.step("with a store", () => {
    const config = loadConfig({
      ...URL_ENV,
      INCONTEXT_SHARED_STORE: "redis://127.0.0.1:6379",
      INCONTEXT_SHARED_STORE_SECRET: SECRET,
    });
    strictEqual(config.sharedStoreSecret, SECRET);
  });
  await t.step("too short, or without a store", () => {
    for (
      const [env, rule] of [
        [
          {
            INCONTEXT_SHARED_STORE: "redis://127.0.0.1:6379",
            INCONTEXT_SHARED_STORE_SECRET: "short",
          },
          /at least 32 characters/,
        ],
        [{ INCONTEXT_SHARED_STORE_SECRET: SECRET }, /set both, or neither/],
      ] as const
    ) {
      let error: unknown;
      try {
        loadConfig({ ...URL_ENV, ...env });
      } catch (caught) {
        error = caught;
      }
      ok(error instanceof ConfigError);
      strictEqual(error.issues.length, 1);
      strictEqual(error.issues[0]!.variable, "INCONTEXT_SHARED_STORE_SECRET");
      ok(rule.test(error.issues[0]!.rule), error.issues[0]!.rule);
      ok(!error.message.includes(SECRET) && !error.message.includes("short"));
    }
  });
});
