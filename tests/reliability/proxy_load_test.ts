/**
 * The proxy under load: 2,000 streamed requests from 200
 * concurrent clients through the real server (examples/server.ts as a child
 * process, so its memory is its own) in front of a seeded faulty upstream;
 * slow readers; a stalled upstream; SIGTERM with streams in flight. Every
 * client gets the upstream's bytes unchanged or a clear error, and no answer
 * is mixed with another's.
 */
import { ok, rejects, strictEqual, throws } from "node:assert/strict";
import {
  createFakeUpstreamHandler,
  FakeBackend,
  serveFakeUpstream,
} from "../../src/testing/mod.ts";
import { createProxyHandler } from "../../src/proxy/mod.ts";
import { createCountCache } from "../../src/cache/mod.ts";
import { VllmBackend } from "../../src/backends/vllm/mod.ts";
import { serveSecretUpstream } from "./_proxy_secret_upstream.ts";
import { postJson, serveProxy } from "./_proxy_serve.ts";
import {
  loadBody,
  type Outcome,
  request,
  SEEDED_FAULTS,
  serveTimedUpstream,
} from "./_proxy_load.ts";
import { judge, latency, tally } from "./_proxy_verdict.ts";
import { sampleRss, spawnProxy } from "./_proxy_spawn.ts";
import { refusesConnections } from "./_in_flight.ts";
import { HANG_MS, until } from "../_kit/hang.ts";

// Every request is issued and judged, however long that takes: how fast the
// proxy serves them is bench/proxy_load.ts's figure, not this test's.
const TOTAL = 2_000;
const CLIENTS = 200;
const SEQUENTIAL = 200;
const SLOW_CLIENTS = 4;
const MIB = 1024 * 1024;

const unhandled: unknown[] = [];
globalThis.addEventListener("unhandledrejection", (event) => {
  unhandled.push(event.reason);
  event.preventDefault();
});

Deno.test("the proxy holds 2,000 streamed requests from 200 clients against a faulty upstream", async () => {
  await using upstream = serveTimedUpstream(SEEDED_FAULTS);
  await using proxy = await spawnProxy(upstream.url, {
    INCONTEXT_TOKENIZER_URL: `${upstream.url}/tokenize`,
  });
  const target = `${proxy.url}/v1/chat/completions`;
  const sampler = await sampleRss(proxy);
  const rss = sampler.samples;
  const sequential: Outcome[] = [];
  const outcomes: Outcome[] = [];
  let loadMs = 0;
  try {
    // One client alone first: the proxy's own cost without queueing.
    for (let n = 0; n < SEQUENTIAL; n++) {
      const id = `seq-${n}`;
      sequential.push(
        await request(target, id, loadBody(id), { timeoutMs: HANG_MS }),
      );
    }
    const started = performance.now();
    let issued = 0;
    const client = async () => {
      while (issued < TOTAL) {
        const id = String(issued++).padStart(6, "0");
        outcomes.push(
          await request(target, id, loadBody(id), { timeoutMs: HANG_MS }),
        );
      }
    };
    const slow = async (n: number) => {
      const id = `slow-${n}`;
      outcomes.push(
        await request(target, id, loadBody(id, true), {
          pauseMs: 20,
          timeoutMs: HANG_MS,
        }),
      );
    };
    await Promise.all([
      Promise.all(Array.from({ length: CLIENTS }, client)).then(() => {
        loadMs = performance.now() - started;
      }),
      ...Array.from({ length: SLOW_CLIENTS }, (_, n) => slow(n)),
    ]);
  } finally {
    await sampler.stop();
  }
  rss.push(await proxy.rss());

  const alone = await judge(sequential, upstream);
  const loaded = await judge(outcomes, upstream);
  const slowOnes = loaded.filter((v) => v.id.startsWith("slow-"));
  const fastOnes = loaded.filter((v) => !v.id.startsWith("slow-"));
  const broken = [...alone, ...loaded].filter((v) => v.broken);
  const healthy = await fetch(`${proxy.url}/incontext/healthz`);
  await healthy.body?.cancel();
  const peak = Math.max(...rss);
  console.log([
    `proxy load: ${TOTAL} requests from ${CLIENTS} concurrent streaming clients in ${
      (loadMs / 1000).toFixed(1)
    } s (${
      Math.round(TOTAL / (loadMs / 1000))
    } req/s), plus ${SLOW_CLIENTS} slow readers and ${SEQUENTIAL} sequential requests first`,
    `  outcomes: ${tally(fastOnes)}`,
    `  slow readers: ${tally(slowOnes)}`,
    `  broken promises (altered bytes, mixed answers, hangs, unclear errors): ${broken.length}; unhandled rejections: ${unhandled.length}`,
    `  added latency (client time - upstream's own time), 1 client: ${
      latency(alone)
    }`,
    `  added latency, ${CLIENTS} clients (queueing on 2 cores shared by clients, proxy and upstream): ${
      latency(fastOnes)
    }`,
    `  proxy RSS: start ${(rss[0]! / MIB).toFixed(0)} MiB, peak ${
      (peak / MIB).toFixed(0)
    } MiB, end ${(rss.at(-1)! / MIB).toFixed(0)} MiB (${rss.length} samples)`,
  ].join("\n"));

  strictEqual(loaded.length, TOTAL + SLOW_CLIENTS);
  strictEqual(
    broken.length,
    0,
    broken.slice(0, 20).map((v) => `${v.id}: ${v.broken}`).join("\n"),
  );
  strictEqual(unhandled.length, 0, String(unhandled[0]));
  strictEqual(healthy.status, 200);
  // Every fault kind was drawn, so every path above was taken.
  for (
    const kind of ["ok", "ok after", "cut", "upstream 500", "upstream 503"]
  ) {
    ok(loaded.some((v) => v.kind.startsWith(kind)), kind);
  }
  strictEqual(slowOnes.length, SLOW_CLIENTS);
  // The cache and anchors are bounded at 4096 entries each: memory is not
  // proportional to 10,000 distinct conversations.
  ok(rss.every((bytes) => bytes > 0), "an RSS sample failed");
  ok(peak < 512 * MIB, `peak RSS ${peak}`);
  ok(!/error: Uncaught/.test(proxy.stderr.text), proxy.stderr.text);
});

/** Resolves with `promise`, or rejects once `ms` have passed: a hang fails the test. */
async function within<T>(ms: number, promise: Promise<T>): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`hung for ${ms} ms`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

const chat = (content: string, stream = false) => ({
  model: "m",
  messages: [{ role: "user", content }],
  ...(stream ? { stream: true } : {}),
});

Deno.test("the proxy bounds a stalled upstream with its timeouts", async (t) => {
  await t.step(
    "no response headers in time: 504 upstream_timeout, and the next request works",
    async () => {
      await using upstream = await serveFakeUpstream({ fault: "stall" });
      await using proxy = serveProxy(upstream.url, {
        upstreamTimeoutSeconds: 0.3,
      });
      const started = performance.now();
      const response = await within(
        HANG_MS,
        postJson(`${proxy.url}/v1/chat/completions`, chat("stalled")),
      );
      const elapsed = performance.now() - started;
      strictEqual(response.status, 504);
      const { error } = await response.json();
      strictEqual(error.code, "upstream_timeout");
      ok(error.message.includes("0.3 seconds"), error.message);
      // A lower bound only: a timer never fires early, on any machine.
      ok(elapsed >= 290, `answered after ${elapsed} ms`);
      upstream.fault = "none";
      const next = await postJson(
        `${proxy.url}/v1/chat/completions`,
        chat("x"),
      );
      strictEqual(next.status, 200);
      await next.body?.cancel();
      const metrics = await (await fetch(`${proxy.url}/incontext/metrics`))
        .text();
      ok(
        metrics.includes(
          'incontext_upstream_timeouts_total{phase="headers"} 1',
        ),
        metrics,
      );
    },
  );

  await t.step(
    "a body idle too long: the client's stream ends with an error",
    async () => {
      await using upstream = await serveFakeUpstream({ chunkDelayMs: 60_000 });
      await using proxy = serveProxy(upstream.url, {
        upstreamIdleTimeoutSeconds: 0.3,
      });
      const response = await postJson(
        `${proxy.url}/v1/chat/completions`,
        chat("stalls mid-stream", true),
      );
      strictEqual(response.status, 200);
      const reader = response.body!.getReader();
      const first = await reader.read();
      ok(new TextDecoder().decode(first.value).startsWith("data: "));
      await rejects(within(HANG_MS, reader.read()));
      const metrics = await (await fetch(`${proxy.url}/incontext/metrics`))
        .text();
      ok(metrics.includes('incontext_upstream_timeouts_total{phase="body"} 1'));
    },
  );

  await t.step("a slow client is not an idle upstream", async () => {
    const fake = createFakeUpstreamHandler({ reply: () => "a b c d e f g h" });
    const proxy = createProxyHandler({
      upstream: "http://upstream.test",
      window: 55705,
      contextLength: 65536,
      backend: new FakeBackend({ count: 100 }),
      fetch: fake.fetch,
      upstreamIdleTimeoutSeconds: 0.05,
    });
    const response = await proxy(
      new Request("http://proxy.test/v1/chat/completions", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(chat("read me slowly", true)),
      }),
    );
    let text = "";
    // Pauses 3x the idle timeout between reads: only upstream waits count.
    for await (const chunk of response.body!) {
      text += new TextDecoder().decode(chunk);
      await new Promise((resolve) => setTimeout(resolve, 150));
    }
    ok(text.trimEnd().endsWith("data: [DONE]"), text);
  });

  await t.step(
    "the proxy's signal ends streams in flight and answers 503 after",
    async () => {
      await using upstream = await serveFakeUpstream({ chunkDelayMs: 60_000 });
      const closing = new AbortController();
      await using proxy = serveProxy(upstream.url, { signal: closing.signal });
      const response = await postJson(
        `${proxy.url}/v1/chat/completions`,
        chat("in flight", true),
      );
      const reader = response.body!.getReader();
      await reader.read();
      closing.abort();
      await rejects(within(HANG_MS, reader.read()));
      const late = await postJson(
        `${proxy.url}/v1/chat/completions`,
        chat("too late"),
      );
      strictEqual(late.status, 503);
      strictEqual((await late.json()).error.code, "proxy_shutting_down");
    },
  );

  await t.step("the timeouts are validated", () => {
    for (const upstreamTimeoutSeconds of [0, -1, NaN, 1e10]) {
      throws(
        () =>
          createProxyHandler({
            upstream: "http://upstream.test",
            window: 55705,
            contextLength: 65536,
            backend: new FakeBackend({ count: 1 }),
            upstreamTimeoutSeconds,
          }),
        RangeError,
      );
    }
  });
});

Deno.test("examples/server.ts finishes streams in flight on SIGTERM and refuses new connections", async (t) => {
  await t.step(
    "under load: every stream in flight completes unchanged, new connections are refused",
    async () => {
      // About 15 events 100 ms apart: each stream lasts ~1.5 s, and the
      // grace period is a hang bound, not a deadline a busy machine can miss.
      await using upstream = serveTimedUpstream("none", 100);
      await using proxy = await spawnProxy(upstream.url, {
        INCONTEXT_TOKENIZER_URL: `${upstream.url}/tokenize`,
        INCONTEXT_SHUTDOWN_GRACE_SECONDS: String(HANG_MS / 1000),
      });
      const target = `${proxy.url}/v1/chat/completions`;
      const inFlight = Array.from({ length: 100 }, (_, n) => {
        const id = `term-${n}`;
        return request(target, id, loadBody(id), { timeoutMs: HANG_MS });
      });
      // Every stream has reached the upstream before the signal.
      await until(() => upstream.timings.size === 100, "100 streams start");
      strictEqual(upstream.timings.size, 100);
      const signalled = performance.now();
      proxy.child.kill("SIGTERM");
      ok(await refusesConnections(proxy.port), "a new connection was accepted");
      const late = await request(target, "late", loadBody("late"), {
        timeoutMs: HANG_MS,
      });
      strictEqual(late.failed, "fetch");
      const outcomes = await within(HANG_MS, Promise.all(inFlight));
      const status = await within(HANG_MS, proxy.child.status);
      const stopped = performance.now() - signalled;
      const verdicts = await judge(outcomes, upstream);
      const broken = verdicts.filter((v) => v.broken);
      strictEqual(broken.length, 0, JSON.stringify(broken.slice(0, 5)));
      ok(verdicts.every((v) => v.kind === "ok"));
      strictEqual(status.code, 0, proxy.stderr.text);
      console.log(
        `SIGTERM with 100 streams in flight: all 100 completed unchanged; the server exited after ${
          stopped.toFixed(0)
        } ms`,
      );
    },
  );

  await t.step(
    "past the grace period, streams still in flight end with an error and the server exits",
    async () => {
      // The second event comes after a minute: the streams outlive any grace.
      await using upstream = serveTimedUpstream("none", 60_000);
      await using proxy = await spawnProxy(upstream.url, {
        INCONTEXT_TOKENIZER_URL: `${upstream.url}/tokenize`,
        INCONTEXT_SHUTDOWN_GRACE_SECONDS: "0.5",
      });
      const target = `${proxy.url}/v1/chat/completions`;
      const inFlight = Array.from({ length: 5 }, (_, n) => {
        const id = `grace-${n}`;
        return request(target, id, loadBody(id), { timeoutMs: HANG_MS });
      });
      await until(() => upstream.timings.size === 5, "5 streams start");
      const signalled = performance.now();
      proxy.child.kill("SIGTERM");
      const outcomes = await within(HANG_MS, Promise.all(inFlight));
      const status = await within(HANG_MS, proxy.child.status);
      const stopped = performance.now() - signalled;
      for (const outcome of outcomes) {
        strictEqual(outcome.status, 200);
        strictEqual(outcome.failed, "read");
        ok(outcome.text.startsWith("data: "));
      }
      strictEqual(status.code, 0);
      // A lower bound only: the grace period is waited out, on any machine.
      ok(stopped >= 450, `stopped after ${stopped} ms`);
      ok(
        /grace period of 0.5 s over/.test(
          proxy.stdout.text + proxy.stderr.text,
        ),
      );
    },
  );
});

Deno.test("/incontext/healthz asks the tokenizer each time, not the count cache", async () => {
  await using upstream = serveSecretUpstream();
  await using cache = createCountCache({ inProcess: true });
  await using proxy = serveProxy(upstream.url, {
    backend: new VllmBackend({ url: `${upstream.url}/tokenize`, cache }),
    cache,
  });
  const health = async () => {
    const response = await fetch(`${proxy.url}/incontext/healthz`);
    return { ...(await response.json()), http: response.status };
  };
  strictEqual((await health()).http, 200);
  strictEqual((await health()).http, 200);
  upstream.mode = "echo-tokenize-errors";
  const sick = await health();
  strictEqual(sick.http, 503);
  strictEqual(sick.tokenizer, "unreachable");
});
