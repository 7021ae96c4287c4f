/**
 * Hostile input to the proxy (a real server on port 0) and
 * to the library (budget(), budgetedFetch, budgetMiddleware): each body or
 * header gets a 4xx with a clear message or goes on unchanged (a budgeted
 * body changes only in its cap), nothing throws, the process stays up, and
 * a normal request right after still works.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import { budget } from "../../mod.ts";
import { createCountCache } from "../../src/cache/mod.ts";
import { VllmBackend } from "../../src/backends/vllm/mod.ts";
import { budgetedFetch } from "../../src/bridges/fetch.ts";
import { budgetMiddleware } from "../../src/bridges/middleware.ts";
import { createProxyHandler } from "../../src/proxy/mod.ts";
import { numbersSurviveRewrite } from "../../src/bridges/number_safety.ts";
import { parseJson } from "@incontext/engine/vllm";
import {
  createFakeUpstreamHandler,
  FakeBackend,
  serveFakeUpstream,
} from "../../src/testing/mod.ts";
import {
  assertForwarded,
  type HostileCase,
  hostileCases,
  MAX_REQUEST_BYTES,
  smugglingRequests,
} from "./_proxy_hostile_cases.ts";
import { C, type ServedProxy, serveProxy, W } from "./_proxy_serve.ts";
import { unlessHung, until } from "../_kit/hang.ts";

const CHAT = "/v1/chat/completions";

async function normalRequestWorks(proxy: ServedProxy): Promise<void> {
  const response = await fetch(`${proxy.url}${CHAT}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      model: "m",
      messages: [{ role: "user", content: "still there?" }],
    }),
  });
  strictEqual(response.status, 200);
  const reply = await response.json();
  strictEqual(reply.choices[0].message.content, "Noted: 1 messages.");
  strictEqual(response.headers.get("x-incontext-action"), "set");
}

async function assertClearError(
  response: Response,
  status: number,
  code: string,
  message: RegExp,
): Promise<void> {
  strictEqual(response.status, status);
  const { error } = await response.json();
  strictEqual(error.code, code);
  ok(typeof error.message === "string" && message.test(error.message), error);
}

function assertPrototypeClean(): void {
  const probe: Record<string, unknown> = {};
  strictEqual(probe.polluted, undefined);
  strictEqual(probe.max_tokens, undefined);
  deepStrictEqual(Object.keys(Object.prototype), []);
}

Deno.test("the proxy answers hostile bodies with a clear 4xx or forwards them unchanged, and stays up", async (t) => {
  await using upstream = await serveFakeUpstream({ maxModelLen: C });
  await using cache = createCountCache({ inProcess: true });
  await using proxy = serveProxy(upstream.url, {
    backend: new VllmBackend({ url: upstream.tokenizeUrl, cache }),
    maxRequestBytes: MAX_REQUEST_BYTES,
  });
  const send = async (hostile: HostileCase) => {
    upstream.requests.length = 0;
    const response = await fetch(`${proxy.url}${CHAT}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: hostile.bytes,
    });
    const generations = upstream.requests.filter((r) => r.path === CHAT);
    const { expect } = hostile;
    if (typeof expect === "object") {
      await assertClearError(
        response,
        expect.reject,
        expect.code,
        expect.message,
      );
      strictEqual(generations.length, 0, "the upstream was called");
    } else {
      await response.body?.cancel();
      strictEqual(generations.length, 1);
      assertForwarded(hostile.bytes, generations[0]!.text, expect, W);
      ok(response.status < 500, `status ${response.status}`);
    }
  };
  for (const hostile of hostileCases()) {
    await t.step(hostile.name, async () => {
      await send(hostile);
      await normalRequestWorks(proxy);
      deepStrictEqual(proxy.errors.splice(0), []);
    });
  }

  await t.step("Object.prototype is not polluted afterwards", () => {
    assertPrototypeClean();
  });

  await t.step(
    "a body over the byte limit gets 413, declared or streamed",
    async () => {
      const body = new Uint8Array(MAX_REQUEST_BYTES + 1).fill(0x20);
      upstream.requests.length = 0;
      const declared = await fetch(`${proxy.url}${CHAT}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body,
      });
      await assertClearError(declared, 413, "request_too_large", /exceeds/);
      const streamed = await fetch(`${proxy.url}${CHAT}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: new Blob([body]).stream(),
      });
      strictEqual(streamed.status, 413);
      await streamed.body?.cancel();
      strictEqual(upstream.requests.length, 0);
      await normalRequestWorks(proxy);
    },
  );
});

Deno.test("budget() takes hostile requests without throwing, mutating or polluting", async (t) => {
  await using upstream = await serveFakeUpstream({ maxModelLen: C });
  await using cache = createCountCache({ inProcess: true });
  const backends = {
    vllm: new VllmBackend({ url: upstream.tokenizeUrl, cache }),
    fixed: new FakeBackend({ count: 100 }),
    failing: new FakeBackend({ error: new Error("down") }),
  };
  const objects = hostileCases().filter((c) => c.object);
  for (const [name, backend] of Object.entries(backends)) {
    await t.step(`with the ${name} backend`, async () => {
      for (const hostile of objects) {
        const text = new TextDecoder().decode(hostile.bytes);
        const request = JSON.parse(text);
        const result = await budget(request, {
          window: W,
          contextLength: C,
          backend,
        });
        strictEqual(JSON.stringify(request), JSON.stringify(JSON.parse(text)));
        ok(["set", "compress", "unchanged"].includes(result.action));
        if (result.action === "set") {
          const cap = result.request[result.field!];
          ok(
            Number.isSafeInteger(cap) && (cap as number) >= 1 &&
              (cap as number) <= W,
            hostile.name,
          );
        } else strictEqual(result.request, request);
      }
      assertPrototypeClean();
    });
  }
});

/**
 * What the bridges (counting 100 tokens) do with a case the proxy rejects: a
 * malformed body goes on as the caller's own for the server to judge; a long
 * one fits.
 */
function bridged(hostile: HostileCase): "forward" | "verbatim" {
  const { expect } = hostile;
  if (typeof expect !== "object") return expect;
  return expect.code === "invalid_json" ? "verbatim" : "forward";
}

Deno.test("budgetedFetch and budgetMiddleware pass hostile bodies on unchanged or answer 4xx", async (t) => {
  const upstream = createFakeUpstreamHandler({ maxModelLen: C });
  const options = { window: W, contextLength: C };
  const cases = hostileCases();
  await t.step(
    "budgetedFetch: invalid bodies go on byte for byte",
    async () => {
      const sent: Uint8Array[] = [];
      const inner: typeof fetch = async (input, init) => {
        const request = new Request(input, init);
        sent.push(new Uint8Array(await request.clone().arrayBuffer()));
        return upstream.fetch(request);
      };
      const wrapped = budgetedFetch(inner, {
        ...options,
        backend: new FakeBackend({ count: 100 }),
      });
      for (const hostile of cases) {
        sent.length = 0;
        const response = await wrapped(`http://upstream.test${CHAT}`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: hostile.bytes,
        });
        await response.body?.cancel();
        strictEqual(sent.length, 1, hostile.name);
        const expect = bridged(hostile);
        assertForwarded(hostile.bytes, sent[0]!, expect, W);
      }
    },
  );
  await t.step("budgetMiddleware: 400 for what cannot be read", async () => {
    const middleware = budgetMiddleware({
      ...options,
      backend: new FakeBackend({ count: 100 }),
    });
    for (const hostile of cases) {
      let forwarded: Uint8Array | undefined;
      const response = await middleware(
        new Request(`http://proxy.test${CHAT}`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: hostile.bytes,
        }),
        async (request) => {
          forwarded = new Uint8Array(await request.arrayBuffer());
          return new Response("ok");
        },
      );
      const { expect } = hostile;
      if (typeof expect === "object" && expect.code === "invalid_json") {
        await assertClearError(response, 400, "invalid_json", expect.message);
        strictEqual(forwarded, undefined, hostile.name);
      } else {
        await response.body?.cancel();
        ok(forwarded, hostile.name);
        assertForwarded(hostile.bytes, forwarded, bridged(hostile), W);
      }
    }
  });
  assertPrototypeClean();
});

Deno.test("the proxy forwards odd headers unchanged and drops hop-by-hop ones", async (t) => {
  await t.step(
    "named hop-by-hop headers go no further, either way",
    async () => {
      let forwarded: Headers | undefined;
      const proxy = createProxyHandler({
        upstream: "http://upstream.test",
        window: W,
        contextLength: C,
        backend: new FakeBackend({ count: 100 }),
        fetch: (input, init) => {
          forwarded = new Request(input, init).headers;
          return Promise.resolve(
            new Response("{}", {
              headers: {
                "content-type": "application/json",
                connection: "x-upstream-hop",
                "x-upstream-hop": "internal",
                "keep-alive": "timeout=5",
                "x-end-to-end": "kept",
              },
            }),
          );
        },
      });
      const response = await proxy(
        new Request("http://proxy.test/v1/models", {
          headers: {
            connection: "keep-alive, X-Secret-Hop",
            "x-secret-hop": "s3cret",
            "keep-alive": "timeout=5",
            "proxy-authorization": "Basic czNjcmV0",
            te: "trailers",
            upgrade: "h2c",
            "transfer-encoding": "chunked",
            host: "evil.example",
            authorization: "Bearer for-the-upstream",
          },
        }),
      );
      await response.body?.cancel();
      for (
        const name of [
          "connection",
          "x-secret-hop",
          "keep-alive",
          "proxy-authorization",
          "te",
          "upgrade",
          "transfer-encoding",
        ]
      ) strictEqual(forwarded!.get(name), null, name);
      strictEqual(forwarded!.get("authorization"), "Bearer for-the-upstream");
      strictEqual(forwarded!.get("host"), null); // fetch sets the upstream's
      strictEqual(response.headers.get("x-upstream-hop"), null);
      strictEqual(response.headers.get("keep-alive"), null);
      strictEqual(response.headers.get("x-end-to-end"), "kept");
    },
  );

  await using upstream = await serveFakeUpstream({ maxModelLen: C });
  await using proxy = serveProxy(upstream.url);
  await t.step(
    "odd names, Latin-1 values and a 60 KB header pass unchanged",
    async () => {
      upstream.requests.length = 0;
      const odd = "x-odd!#$%&'*+.^_`|~";
      const response = await fetch(`${proxy.url}/v1/models`, {
        headers: {
          [odd]: "v",
          "x-latin-1": "caf\xe9",
          "x-big": "a".repeat(60_000),
          host: "evil.example",
        },
      });
      strictEqual(response.status, 200);
      await response.body?.cancel();
      const { headers } = upstream.requests[0]!;
      strictEqual(headers[odd], "v");
      strictEqual(headers["x-latin-1"], "caf\xe9");
      strictEqual(headers["x-big"]?.length, 60_000);
      strictEqual(headers.host, new URL(upstream.url).host);
      await normalRequestWorks(proxy);
    },
  );
  await t.step("a 1 MB header is refused before the proxy runs", async () => {
    upstream.requests.length = 0;
    const response = await fetch(`${proxy.url}/v1/models`, {
      headers: { "x-huge": "a".repeat(1_000_000) },
    });
    ok(response.status >= 400 && response.status < 500);
    await response.body?.cancel();
    strictEqual(upstream.requests.length, 0);
    await normalRequestWorks(proxy);
  });
  deepStrictEqual(proxy.errors, []);
});

/**
 * Sends raw bytes on a new connection and returns the status line the server
 * answered ("" when it closed without one, or when `cut` came first: then the
 * client closes the connection).
 */
async function rawExchange(
  port: number,
  request: string,
  cut?: Promise<unknown>,
): Promise<string> {
  const connection = await Deno.connect({ hostname: "127.0.0.1", port });
  let closed = false;
  const close = () => {
    if (closed) return;
    closed = true;
    connection.close();
  };
  void cut?.then(close);
  let text = "";
  try {
    await connection.write(
      Uint8Array.from(request, (c) => c.charCodeAt(0) & 0xff),
    );
    const buffer = new Uint8Array(4096);
    await unlessHung(
      "the server's answer",
      (async () => {
        while (!text.includes("\r\n")) {
          const n = await connection.read(buffer);
          if (n === null) break;
          text += new TextDecoder().decode(buffer.subarray(0, n));
        }
      })(),
    );
  } catch (error) {
    // Cut by the client: the server said nothing before.
    if (!closed) throw error;
  } finally {
    close();
  }
  return text.split("\r\n")[0]!;
}

Deno.test("the proxy's server refuses smuggling and injection at the HTTP layer", async (t) => {
  await using upstream = await serveFakeUpstream({ maxModelLen: C });
  await using proxy = serveProxy(upstream.url);
  const body = JSON.stringify({ model: "m", messages: [] });
  const post = (headers: string, payload = body) =>
    `POST /v1/chat/completions HTTP/1.1\r\nHost: proxy\r\nContent-Type: application/json\r\n${headers}\r\n\r\n${payload}`;
  const refused: [string, string][] = [
    ...smugglingRequests("/v1/chat/completions", body),
    [
      "500 headers",
      `GET /v1/models HTTP/1.1\r\nHost: proxy\r\n${
        Array.from({ length: 500 }, (_, i) => `X-H${i}: v`).join("\r\n")
      }\r\n\r\n`,
    ],
  ];
  for (const [name, request] of refused) {
    await t.step(`${name}: 4xx, nothing forwarded`, async () => {
      upstream.requests.length = 0;
      const status = await rawExchange(proxy.port, request);
      ok(/^HTTP\/1\.1 4\d\d/.test(status) || status === "", status);
      strictEqual(upstream.requests.length, 0);
      await normalRequestWorks(proxy);
    });
  }
  await t.step(
    "a body shorter than its Content-Length: no handler error",
    async () => {
      upstream.requests.length = 0;
      // Cut once the handler holds the request, waiting for the rest.
      const status = await rawExchange(
        proxy.port,
        post(`Content-Length: ${body.length + 100}`),
        until(() => proxy.inFlight > 0, "the handler holding the request"),
      );
      strictEqual(status, "");
      await until(() => proxy.inFlight === 0, "the cut body's handler");
      strictEqual(
        upstream.requests.filter((r) => r.path.endsWith(CHAT)).length,
        0,
      );
      await normalRequestWorks(proxy);
    },
  );
  await t.step(
    "an absolute URI or a dot-dot path stays on the upstream, under its base",
    async () => {
      // A base path on the upstream: no request may climb out of it.
      await using based = serveProxy(`${upstream.url}/base`);
      upstream.requests.length = 0;
      for (
        const target of [
          "http://evil.example/v1/models",
          "/../../etc/passwd",
          "/%2e%2e/%2e%2e/etc/passwd",
        ]
      ) {
        const status = await rawExchange(
          based.port,
          `GET ${target} HTTP/1.1\r\nHost: proxy\r\nConnection: close\r\n\r\n`,
        );
        ok(/^HTTP\/1\.1 \d\d\d/.test(status), status);
      }
      strictEqual(upstream.requests.length, 3);
      for (const { path, headers } of upstream.requests) {
        ok(path.startsWith("/base/"), path);
        strictEqual(headers.host, new URL(upstream.url).host);
      }
      deepStrictEqual(based.errors, []);
    },
  );
  await normalRequestWorks(proxy);
  deepStrictEqual(proxy.errors, []);
});

Deno.test("prototype-pollution keys stay data under Node's __proto__ semantics", async () => {
  const probe = new URL("./_proxy_proto_probe.ts", import.meta.url).pathname;
  const config = new URL("../../deno.json", import.meta.url).pathname;
  const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--unstable-unsafe-proto", "--config", config, probe],
    env: { NO_COLOR: "1" },
  }).output();
  strictEqual(code, 0, new TextDecoder().decode(stderr));
  const report = JSON.parse(new TextDecoder().decode(stdout));
  strictEqual(report.accessor, true, "the probe ran without the accessor");
  for (const [bridge, text] of Object.entries(report.forwarded)) {
    const sent = JSON.parse(text as string);
    ok(Object.hasOwn(sent, "__proto__"), bridge);
    deepStrictEqual(
      Object.getOwnPropertyDescriptor(sent, "__proto__")?.value,
      { polluted: true, max_tokens: 1 },
      bridge,
    );
    ok(Object.hasOwn(sent.messages[0], "__proto__"), bridge);
    strictEqual(sent.messages[0].role, "user", bridge);
  }
  deepStrictEqual(Object.keys(report.forwarded).sort(), [
    "budget",
    "fetch",
    "middleware",
    "proxy",
  ]);
  ok(report.canonical.includes('"__proto__"'), report.canonical);
  strictEqual(report.plainMatches, false);
  deepStrictEqual(report.prototypeKeys, []);
  strictEqual(report.polluted, null);
});

Deno.test("numbersSurviveRewrite() finds the numbers a rewrite would alter", () => {
  const cases: [string, boolean][] = [
    ['{"seed":9007199254740992}', true], // 2^53, exact
    ['{"seed":9007199254740993}', false],
    ['{"seed":12345678901234567890}', false],
    ['{"seed":-12345678901234567890}', false],
    ['{"t":1e400}', false],
    ['{"t":-1E+400}', false],
    ['{"t":1.5e300}', true],
    ['{"t":1e-400}', true], // underflows to 0 on both sides
    ['{"t":1234567890123456.5}', true], // a float: the same double
    ['{"t":-0}', true],
    ['{"t":1.0}', true],
    // Digits inside strings, escaped quotes included, are text.
    ['{"id":"12345678901234567890","q":"a\\"1e400\\"","n":5}', true],
    ['{"a":"\\\\","seed":12345678901234567890}', false],
    // Python's constants are written again as they came.
    ['{"t":-Infinity,"u":NaN,"v":[Infinity]}', true],
    ['{"t":-Infinity,"seed":12345678901234567890}', false],
  ];
  for (const [text, expected] of cases) {
    parseJson(text); // each is JSON as Python's json.loads reads it
    strictEqual(numbersSurviveRewrite(text), expected, text);
  }
});
