/**
 * A long body goes upstream while its prompt is counted: the upstream has
 * the body but its caps before the decision, the decision's caps end it,
 * and a decision that sends anything else withdraws it (the connection is
 * closed short of its length, and nothing of it is counted as the
 * upstream's).
 *
 * Covers: src/proxy/early_send.ts, src/proxy/upstream.ts, src/proxy/handler.ts, src/proxy/early_start.ts
 */
import { deepStrictEqual, ok, rejects, strictEqual } from "node:assert/strict";
import { createServer, type Socket } from "node:net";
import type { AddressInfo } from "node:net";
import {
  EARLY_SEND_BYTES,
  EARLY_TAIL_BYTES,
  earlyBody,
  EarlySendWithdrawn,
} from "../../src/proxy/early_send.ts";
import {
  createExactFetch,
  createProxyHandler,
  type ProxyOptions,
} from "../../src/proxy/mod.ts";
import { FakeBackend } from "../../src/testing/mod.ts";
import { until } from "../_kit/hang.ts";

const encoder = new TextEncoder();
const decoder = new TextDecoder();

async function readAll(stream: ReadableStream<Uint8Array>): Promise<string> {
  return await new Response(stream).text();
}

Deno.test("earlyBody: the body ends as the decision's object, caps last, of the length it declared", async () => {
  const request = {
    max_tokens: 65536,
    model: "m",
    messages: [{ role: "user", content: "héllo \u2028" }],
    max_completion_tokens: 7,
  };
  const text = JSON.stringify(request);
  const early = earlyBody(request, text, encoder.encode(text))!;
  const sent = { ...request, max_tokens: 100, max_completion_tokens: 100 };
  strictEqual(early.commit(sent), true);
  strictEqual(await early.settled, true);
  const bytes = encoder.encode(await readAll(early.stream));
  strictEqual(bytes.byteLength, early.length);
  const body = decoder.decode(bytes);
  deepStrictEqual(JSON.parse(body), sent);
  ok(
    /"max_tokens":100,"max_completion_tokens":100 +\}$/.test(body),
    body.slice(-120),
  );
});

Deno.test("earlyBody: a body with no cap, or only caps, still ends as valid JSON", async () => {
  for (
    const [request, sent] of [
      [{ model: "m" }, { model: "m", max_tokens: 5 }],
      [{ model: "m" }, { model: "m" }],
      [{ max_tokens: 9 }, { max_tokens: 5 }],
      // A cap before the middle: written again.
      [{ max_tokens: 9, pad: "x".repeat(30) }, { pad: "x".repeat(30) }],
    ] as const
  ) {
    const text = JSON.stringify(request);
    const early = earlyBody(request, text, encoder.encode(text))!;
    strictEqual(early.commit(sent), true);
    const body = await readAll(early.stream);
    strictEqual(encoder.encode(body).byteLength, early.length);
    deepStrictEqual(JSON.parse(body), sent);
  }
});

Deno.test("earlyBody: a __proto__ member stays a member, and a Responses cap is a cap", async () => {
  const text = '{"max_output_tokens":9,"__proto__":{"x":1},"input":"hi"}';
  const request = JSON.parse(text);
  const early = earlyBody(request, text, encoder.encode(text))!;
  // The decision's copy, as `writeCap` builds it: the same values, a new cap.
  const sent = Object.fromEntries([
    ...Object.entries(request),
    ["max_output_tokens", 5],
  ]);
  strictEqual(early.commit(sent), true);
  const body = await readAll(early.stream);
  ok(
    body.startsWith('{"__proto__":{"x":1},"input":"hi","max_output_tokens":5 '),
  );
  deepStrictEqual(JSON.parse(body), sent);
});

Deno.test("earlyBody: the caller's own cap goes back as it came when the decision keeps it", async () => {
  const request = { model: "m", max_tokens: "lots" };
  const text = JSON.stringify(request);
  const early = earlyBody(request, text, encoder.encode(text))!;
  strictEqual(early.commit(request), true);
  deepStrictEqual(JSON.parse(await readAll(early.stream)), request);
});

Deno.test("earlyBody: a decision that changes more than the caps withdraws the body", async () => {
  const request = { model: "m", messages: [], max_tokens: 10 };
  const text = JSON.stringify(request);
  for (
    const sent of [
      { ...request, model: "other" },
      { ...request, stream: true },
      { model: "m", max_tokens: 5 },
      { ...request, max_tokens: "x".repeat(200) },
    ]
  ) {
    const early = earlyBody(request, text, encoder.encode(text))!;
    strictEqual(early.commit(sent), false);
    strictEqual(await early.settled, false);
    await rejects(readAll(early.stream), EarlySendWithdrawn);
    strictEqual(early.commit(request), false, "settled once");
  }
});

Deno.test("earlyBody: bodies that cannot be written again exactly are not sent early", () => {
  const request = { model: "m" };
  const utf16 = new Uint8Array(
    new Uint16Array([..."{}"].map((c) => c.charCodeAt(0))).buffer,
  );
  strictEqual(earlyBody(request, "{}", utf16), undefined);
  const bom = new Uint8Array([0xef, 0xbb, 0xbf, ...encoder.encode("{}")]);
  strictEqual(earlyBody(request, "{}", bom), undefined);
  const unsafe = '{"seed":12345678901234567890}';
  strictEqual(
    earlyBody(JSON.parse(unsafe), unsafe, encoder.encode(unsafe)),
    undefined,
  );
});

/** A conversation as the Python SDK writes it: the messages first, the cap after. */
function pythonOrder(cap: string, after = ',"stream":false'): string {
  const messages = JSON.stringify([{
    role: "user",
    content: "é ".repeat(400),
  }]);
  return `{"messages":${messages},"model":"m","max_tokens":${cap}${after}}`;
}

Deno.test("earlyBody: a cap past the middle is replaced in place, and the body keeps its length", async () => {
  const text = pythonOrder("65536");
  const bytes = encoder.encode(text);
  const request = JSON.parse(text);
  const early = earlyBody(request, text, bytes)!;
  strictEqual(early.length, bytes.byteLength);
  strictEqual(early.commit({ ...request, max_tokens: 512 }), true);
  const sent = await readAll(early.stream);
  strictEqual(sent, text.replace('"max_tokens":65536', '"max_tokens":512  '));
  deepStrictEqual(JSON.parse(sent), { ...request, max_tokens: 512 });
});

Deno.test("earlyBody: a cap the decision keeps leaves the body byte for byte", async () => {
  const text = pythonOrder("4096", ',"tools":[{"type":"function"}]');
  const bytes = encoder.encode(text);
  const request = JSON.parse(text);
  const early = earlyBody(request, text, bytes)!;
  strictEqual(early.commit(request), true);
  deepStrictEqual(
    encoder.encode(await readAll(early.stream)),
    bytes,
  );
});

Deno.test("earlyBody: a cap wider than the number it replaces withdraws the body", async () => {
  const text = pythonOrder("900");
  const request = JSON.parse(text);
  const early = earlyBody(request, text, encoder.encode(text))!;
  strictEqual(early.length, encoder.encode(text).byteLength);
  strictEqual(early.commit({ ...request, max_tokens: 1000 }), false);
  await rejects(readAll(early.stream), EarlySendWithdrawn);
});

Deno.test("earlyBody: a cap written with escapes, twice, early, or not as an integer is written again", async () => {
  for (
    const text of [
      pythonOrder("65536").replace('"max_tokens"', '"max\\u005ftokens"'),
      pythonOrder("65536", ',"max_tokens":65536'),
      `{"max_tokens":65536,${pythonOrder("1").slice(1)}`.replace(
        ',"max_tokens":1',
        "",
      ),
      pythonOrder("6.5e4"),
      pythonOrder("65536", ',"max_completion_tokens":65536'),
    ]
  ) {
    const request = JSON.parse(text);
    const early = earlyBody(request, text, encoder.encode(text))!;
    const sent = { ...request, max_tokens: 512 };
    delete sent.max_completion_tokens;
    strictEqual(early.commit(sent), true, text.slice(-60));
    const body = await readAll(early.stream);
    deepStrictEqual(JSON.parse(body), sent);
    ok(/"max_tokens":512 +\}$/.test(body), body.slice(-60));
  }
});

/** One connection as the raw upstream saw it. */
interface Seen {
  head: string;
  /** The declared length, once the head is in. */
  length?: number;
  body: number;
  text: string;
  closed: boolean;
}

/**
 * A raw HTTP/1.1 upstream on port 0 that records how much of each body it
 * received, and answers once the body is whole (or, with `answerEarly`,
 * once the head is in).
 */
async function rawUpstream(options: { answerEarly?: string } = {}) {
  const seen: Seen[] = [];
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    const one: Seen = { head: "", body: 0, text: "", closed: false };
    seen.push(one);
    let buffer = "";
    socket.on("data", (chunk: Uint8Array) => {
      if (one.length === undefined) {
        buffer += decoder.decode(chunk);
        const end = buffer.indexOf("\r\n\r\n");
        if (end === -1) return;
        one.head = buffer.slice(0, end);
        one.length = Number(
          /content-length: (\d+)/i.exec(one.head)?.[1] ?? "0",
        );
        one.text = buffer.slice(end + 4);
        one.body = encoder.encode(one.text).byteLength;
        if (options.answerEarly !== undefined) {
          socket.end(options.answerEarly);
          return;
        }
      } else {
        one.text += decoder.decode(chunk);
        one.body += chunk.byteLength;
      }
      if (one.body >= one.length!) {
        const body = JSON.stringify({
          choices: [],
          usage: { prompt_tokens: 100 },
        });
        socket.end(
          `HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\nconnection: close\r\n\r\n${body}`,
        );
      }
    });
    socket.on("close", () => {
      one.closed = true;
      sockets.delete(socket);
    });
    socket.on("error", () => {});
  });
  await new Promise<void>((resolve) =>
    server.listen(0, "127.0.0.1", () => resolve())
  );
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    seen,
    [Symbol.asyncDispose]: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

/** A count held until released. */
function heldCount(tokens: number) {
  let release!: () => void;
  const held = new Promise<void>((resolve) => release = resolve);
  return {
    backend: new FakeBackend({
      count: async () => {
        await held;
        return tokens;
      },
    }),
    release,
  };
}

const LONG = JSON.stringify({
  model: "m",
  max_tokens: 65536,
  messages: [{ role: "user", content: "x".repeat(EARLY_SEND_BYTES) }],
});

async function metric(
  proxy: ReturnType<typeof createProxyHandler>,
  name: string,
): Promise<string[]> {
  const text = await (await proxy(
    new Request("http://proxy.test/incontext/metrics"),
    { remoteAddr: { hostname: "127.0.0.1" } },
  )).text();
  return text.split("\n").filter((line) => line.startsWith(name));
}

function proxyTo(
  upstream: string,
  options: Partial<ProxyOptions>,
) {
  const exactFetch = createExactFetch();
  const proxy = createProxyHandler({
    upstream,
    window: 55705,
    contextLength: 65536,
    backend: new FakeBackend({ count: 100 }),
    fetch: exactFetch,
    ...options,
  });
  return {
    proxy,
    [Symbol.asyncDispose]: () => exactFetch[Symbol.asyncDispose](),
  };
}

function post(body: string, signal?: AbortSignal): Request {
  return new Request("http://proxy.test/v1/chat/completions", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body,
    ...(signal ? { signal } : {}),
  });
}

Deno.test("proxy: a long body is upstream before its count ends, and the decision's cap ends it", async () => {
  await using upstream = await rawUpstream();
  const count = heldCount(100);
  await using served = proxyTo(upstream.url, { backend: count.backend });
  const answer = served.proxy(post(LONG));
  // Everything but the cap's tail arrives while the count is held.
  await until(
    () =>
      upstream.seen[0] !== undefined && upstream.seen[0].body > 0 &&
      upstream.seen[0].body === upstream.seen[0].length! - EARLY_TAIL_BYTES,
    "the body but its tail upstream",
  );
  count.release();
  const response = await answer;
  strictEqual(response.status, 200);
  strictEqual(response.headers.get("x-incontext-max-tokens"), "55605");
  await response.body?.cancel();
  const seen = upstream.seen[0]!;
  strictEqual(seen.body, seen.length);
  const sent = JSON.parse(seen.text);
  strictEqual(sent.max_tokens, 55605);
  deepStrictEqual(sent.messages, JSON.parse(LONG).messages);
  deepStrictEqual(
    await metric(served.proxy, "incontext_upstream_early_sends_total"),
    ['incontext_upstream_early_sends_total{outcome="committed"} 1'],
  );
  strictEqual(upstream.seen.length, 1, "sent once");
});

Deno.test("proxy: a long body as the Python SDK writes it goes as it came but for the cap's digits", async () => {
  await using upstream = await rawUpstream();
  const count = heldCount(100);
  await using served = proxyTo(upstream.url, { backend: count.backend });
  const messages = JSON.parse(LONG).messages;
  const body = `{"messages":${
    JSON.stringify(messages)
  },"model":"m","max_tokens":65536,"stream":false}`;
  const answer = served.proxy(post(body));
  await until(
    () =>
      upstream.seen[0] !== undefined &&
      upstream.seen[0].body === body.indexOf("65536"),
    "the body up to its cap upstream",
  );
  strictEqual(upstream.seen[0]!.length, encoder.encode(body).byteLength);
  count.release();
  const response = await answer;
  strictEqual(response.status, 200);
  await response.body?.cancel();
  strictEqual(
    upstream.seen[0]!.text,
    body.replace('"max_tokens":65536', '"max_tokens":55605'),
  );
});

Deno.test("proxy: the upstream's headers timeout starts once an early body is whole, not while it is counted", async () => {
  await using upstream = await rawUpstream();
  const count = heldCount(100);
  await using served = proxyTo(upstream.url, {
    backend: count.backend,
    upstreamTimeoutSeconds: 2,
  });
  const answer = served.proxy(post(LONG));
  await until(() => (upstream.seen[0]?.body ?? 0) > 0, "the body upstream");
  // Held past the upstream's timeout: the count's time is not the upstream's.
  await new Promise((resolve) => setTimeout(resolve, 3000));
  count.release();
  const response = await answer;
  strictEqual(response.status, 200);
  await response.body?.cancel();
  deepStrictEqual(
    await metric(served.proxy, "incontext_upstream_timeouts_total{"),
    [],
  );
});

Deno.test("proxy: a refused long body is withdrawn short of its length and counts no upstream answer", async () => {
  await using upstream = await rawUpstream();
  const count = heldCount(55700);
  await using served = proxyTo(upstream.url, {
    backend: count.backend,
    onExhausted: "reject",
  });
  const answer = served.proxy(post(LONG));
  await until(() => (upstream.seen[0]?.body ?? 0) > 0, "the body upstream");
  count.release();
  const response = await answer;
  strictEqual(response.status, 400);
  await response.body?.cancel();
  await until(() => upstream.seen[0]!.closed, "the connection closed");
  ok(upstream.seen[0]!.body < upstream.seen[0]!.length!);
  deepStrictEqual(
    await metric(served.proxy, "incontext_upstream_early_sends_total"),
    ['incontext_upstream_early_sends_total{outcome="withdrawn"} 1'],
  );
  deepStrictEqual(
    await metric(served.proxy, "incontext_upstream_responses_total{"),
    [],
  );
  deepStrictEqual(
    await metric(served.proxy, "incontext_upstream_errors_total{"),
    [],
  );
});

Deno.test("proxy: an upstream answering before the body's end is not the answer to a withdrawn body", async () => {
  await using upstream = await rawUpstream({
    answerEarly:
      "HTTP/1.1 401 Unauthorized\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
  });
  const count = heldCount(55700);
  await using served = proxyTo(upstream.url, {
    backend: count.backend,
    onExhausted: "reject",
  });
  const answer = served.proxy(post(LONG));
  await until(() => upstream.seen[0]?.closed === true, "the early answer");
  count.release();
  const response = await answer;
  strictEqual(response.status, 400);
  await response.body?.cancel();
  deepStrictEqual(
    await metric(served.proxy, "incontext_upstream_responses_total{"),
    [],
  );
});

Deno.test("proxy: a client gone while its long body was counted withdraws it", async () => {
  await using upstream = await rawUpstream();
  const count = heldCount(100);
  await using served = proxyTo(upstream.url, { backend: count.backend });
  const client = new AbortController();
  const answer = served.proxy(post(LONG, client.signal));
  await until(() => (upstream.seen[0]?.body ?? 0) > 0, "the body upstream");
  client.abort();
  count.release();
  strictEqual((await answer).status, 499);
  await until(() => upstream.seen[0]!.closed, "the connection closed");
  ok(upstream.seen[0]!.body < upstream.seen[0]!.length!);
  deepStrictEqual(
    await metric(served.proxy, "incontext_upstream_early_sends_total"),
    ['incontext_upstream_early_sends_total{outcome="withdrawn"} 1'],
  );
});

Deno.test("proxy: an unreachable upstream answers a committed early body 502, once", async () => {
  const closed = createServer();
  await new Promise<void>((resolve) =>
    closed.listen(0, "127.0.0.1", () => resolve())
  );
  const { port } = closed.address() as AddressInfo;
  await new Promise<void>((resolve) => closed.close(() => resolve()));
  await using served = proxyTo(`http://127.0.0.1:${port}`, {});
  const response = await served.proxy(post(LONG));
  strictEqual(response.status, 502);
  strictEqual((await response.json()).error.code, "upstream_unreachable");
  deepStrictEqual(
    await metric(served.proxy, "incontext_upstream_errors_total{"),
    ['incontext_upstream_errors_total{error="unreachable"} 1'],
  );
});

Deno.test("proxy: short bodies, a fetch that cannot frame a stream by length, and earlySend: false send after the count", async () => {
  await using upstream = await rawUpstream();
  const short = JSON.stringify({ model: "m", max_tokens: 65536, messages: [] });
  for (
    const [body, options] of [
      [short, {}],
      [LONG, { earlySend: false }],
      [LONG, { fetch: (input, init) => fetch(input, init) }],
    ] as [string, Partial<ProxyOptions>][]
  ) {
    await using served = proxyTo(upstream.url, options);
    const response = await served.proxy(post(body));
    strictEqual(response.status, 200);
    await response.body?.cancel();
    deepStrictEqual(
      await metric(served.proxy, "incontext_upstream_early_sends_total"),
      [],
    );
  }
  // Sent after the count, written once whole: no tail of spaces.
  const last = upstream.seen.at(-1)!;
  ok(last.text.endsWith('"max_tokens":55605}'), last.text.slice(-40));
});
