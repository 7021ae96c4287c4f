// Covers: src/proxy/health.ts, src/proxy/readiness.ts
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import { createProxyHandler, Readiness } from "../../src/proxy/mod.ts";
import { FakeBackend } from "../../src/testing/mod.ts";
import { proxyFixture, W } from "../_kit/proxy_fixture.ts";

/** The readiness body without its probe time. */
async function found(response: Response): Promise<Record<string, unknown>> {
  const { checkedAt, ...rest } = await response.json();
  ok(!Number.isNaN(Date.parse(checkedAt)), `checkedAt ${checkedAt}`);
  return rest;
}

Deno.test("/incontext/healthz tells a tokenizer that answers with another context length from one that is gone", async () => {
  // The fake upstream serves max_model_len 65536; this proxy is told 131072.
  await using proxy = await proxyFixture({
    contextLength: 131072,
    window: W,
  });
  const response = await fetch(`${proxy.url}/incontext/healthz`);
  strictEqual(response.status, 503);
  deepStrictEqual(await found(response), {
    status: "not_ready",
    configuration: "context_length_mismatch",
    upstream: "reachable",
    tokenizer: "context_length_mismatch",
  });
});

Deno.test("/incontext/livez answers 200 while readyz answers 503 with the upstream and the tokenizer down", async () => {
  await using proxy = await proxyFixture();
  const ready = await fetch(`${proxy.url}/incontext/readyz`);
  strictEqual(ready.status, 200);
  deepStrictEqual(await found(ready), {
    status: "ready",
    configuration: "valid",
    upstream: "reachable",
    tokenizer: "reachable",
  });
  // The fake upstream serves /tokenize too: both go down together.
  await proxy.upstream[Symbol.asyncDispose]();
  const live = await fetch(`${proxy.url}/incontext/livez`);
  strictEqual(live.status, 200);
  deepStrictEqual(await live.json(), { status: "ok" });
  const notReady = await fetch(`${proxy.url}/incontext/readyz`);
  strictEqual(notReady.status, 503);
  deepStrictEqual(await found(notReady), {
    status: "not_ready",
    configuration: "valid",
    upstream: "unreachable",
    tokenizer: "unreachable",
  });
  const healthz = await fetch(`${proxy.url}/incontext/healthz`);
  strictEqual(healthz.status, 503);
  strictEqual((await healthz.json()).status, "not_ready");
});

Deno.test("/incontext/readyz reports a recorded start-up probe while it is fresh, then probes again", async () => {
  let now = 1_000_000;
  const readiness = new Readiness({ maxAgeSeconds: 5, now: () => now });
  const backend = new FakeBackend({ count: 7 });
  let upstreamCalls = 0;
  const proxy = createProxyHandler({
    upstream: "http://upstream.test",
    window: W,
    contextLength: 65536,
    backend,
    readiness,
    fetch: () => {
      upstreamCalls += 1;
      return Promise.resolve(Response.json({ data: [] }));
    },
  });
  const readyz = () => proxy(new Request("http://proxy.test/incontext/readyz"));
  readiness.record({ tokenizer: "unreachable", upstream: "reachable" });
  const atStart = await readyz();
  strictEqual(atStart.status, 503);
  const body = await atStart.json();
  strictEqual(body.tokenizer, "unreachable");
  strictEqual(body.checkedAt, new Date(1_000_000).toISOString());
  strictEqual(upstreamCalls, 0);
  strictEqual(backend.calls.length, 0);
  now += 5000;
  const later = await readyz();
  strictEqual(later.status, 200);
  const again = await later.json();
  strictEqual(again.tokenizer, "reachable");
  strictEqual(again.checkedAt, new Date(1_005_000).toISOString());
  strictEqual(upstreamCalls, 1);
  strictEqual(backend.calls.length, 1);
});

Deno.test("Readiness.current() runs one probe for concurrent checks", async () => {
  const readiness = new Readiness();
  let probes = 0;
  let release!: () => void;
  const gate = new Promise<void>((resolve) => release = resolve);
  const probe = async () => {
    probes += 1;
    await gate;
    return { tokenizer: "estimating", upstream: "reachable" } as const;
  };
  const checks = [readiness.current(probe), readiness.current(probe)];
  release();
  const [a, b] = await Promise.all(checks);
  strictEqual(probes, 1);
  strictEqual(a, b);
  strictEqual(a?.tokenizer, "estimating");
  // maxAgeSeconds 0 (the default): the next check probes again.
  await readiness.current(probe);
  strictEqual(probes, 2);
});

Deno.test("new Readiness() rejects a negative maxAgeSeconds", () => {
  let error: unknown;
  try {
    new Readiness({ maxAgeSeconds: -1 });
  } catch (caught) {
    error = caught;
  }
  ok(error instanceof RangeError);
  ok(error.message.includes("'maxAgeSeconds'"));
});

Deno.test("/incontext/readyz probes again a second after a failed probe, however long a good one lasts", async () => {
  let now = 1_000_000;
  const readiness = new Readiness({ maxAgeSeconds: 5, now: () => now });
  let upstreamUp = false;
  let upstreamCalls = 0;
  const proxy = createProxyHandler({
    upstream: "http://upstream.test",
    window: W,
    contextLength: 65536,
    backend: new FakeBackend({ count: 7 }),
    readiness,
    fetch: () => {
      upstreamCalls += 1;
      return upstreamUp
        ? Promise.resolve(Response.json({ data: [] }))
        : Promise.reject(new TypeError("connection refused"));
    },
  });
  const readyz = () => proxy(new Request("http://proxy.test/incontext/readyz"));
  strictEqual((await readyz()).status, 503);
  strictEqual(upstreamCalls, 1);
  upstreamUp = true;
  now += 999;
  strictEqual((await readyz()).status, 503, "a failure answers for a second");
  strictEqual(upstreamCalls, 1);
  now += 1;
  strictEqual((await readyz()).status, 200, "the recovery shows at once after");
  strictEqual(upstreamCalls, 2);
  upstreamUp = false;
  now += 4999;
  strictEqual((await readyz()).status, 200, "a success answers its 5 s");
  strictEqual(upstreamCalls, 2);
});

Deno.test("/incontext/readyz refreshes a reporter that lags before reading its status", async () => {
  let state = "down";
  let refreshes = 0;
  const proxy = createProxyHandler({
    upstream: "http://upstream.test",
    window: W,
    contextLength: 65536,
    backend: new FakeBackend({ count: 7 }),
    fetch: () => Promise.resolve(Response.json({ data: [] })),
    reporters: [{
      name: "store",
      status: () => ({ state }),
      metricLines: () => [],
      refresh: () => {
        refreshes += 1;
        state = "up";
        return Promise.resolve();
      },
    }],
  });
  const body = await (await proxy(
    new Request("http://proxy.test/incontext/readyz"),
  )).json();
  strictEqual(refreshes, 1);
  deepStrictEqual(body.store, { state: "up" });
});
