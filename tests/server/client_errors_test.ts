// Covers: src/server/client_errors.ts, src/server/http_server.ts
/**
 * Methods the server's parser does not know (methods are case-sensitive:
 * `get` is not `GET`) get the proxy's 501 in OpenAI's error shape, as a
 * method the proxy cannot forward does, not the parser's bare 400. Nothing
 * reaches the upstream, the client's bytes are not echoed, a request
 * pipelined behind a good one leaves the good one's answer whole, and the
 * server goes on serving.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import { FakeBackend, serveFakeUpstream } from "../../src/testing/mod.ts";
import { createProxyHandler } from "../../src/proxy/mod.ts";
import { startHttpServer } from "../../src/server/http_server.ts";
import { rawExchange } from "../reliability/_raw_wire.ts";
import { C, W } from "../reliability/_proxy_serve.ts";

const CHAT = "/v1/chat/completions";
const BODY = JSON.stringify({
  model: "m",
  messages: [{ role: "user", content: "hi" }],
});

/** The raw answers to `request` on one connection, read until the server closes it. */
async function rawAnswers(port: number, request: string): Promise<string> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  try {
    await conn.write(new TextEncoder().encode(request));
    let text = "";
    const buffer = new Uint8Array(65536);
    for (;;) {
      const n = await conn.read(buffer);
      if (n === null) return text;
      text += new TextDecoder().decode(buffer.subarray(0, n));
    }
  } finally {
    conn.close();
  }
}

/** The JSON body of a raw answer. */
function errorOf(text: string): { code: string; message: string } {
  return JSON.parse(text.slice(text.indexOf("\r\n\r\n") + 4)).error;
}

Deno.test("startHttpServer() answers a method its parser refuses with 501", async (t) => {
  await using upstream = await serveFakeUpstream({ maxModelLen: C });
  await using server = await startHttpServer(
    createProxyHandler({
      upstream: upstream.url,
      window: W,
      contextLength: C,
      backend: new FakeBackend({ count: 100 }),
    }),
    {
      hostname: "127.0.0.1",
      port: 0,
      headersTimeoutMs: 10_000,
      requestTimeoutMs: 20_000,
      keepAliveTimeoutMs: 1_000,
      maxConnections: 64,
      backlog: 64,
    },
  );
  const served = async () => {
    const response = await fetch(`http://127.0.0.1:${server.port}${CHAT}`, {
      method: "POST",
      headers: { "content-type": "application/json", connection: "close" },
      body: BODY,
    });
    strictEqual(response.status, 200);
    strictEqual(response.headers.get("x-incontext-action"), "set");
    await response.body?.cancel();
  };
  const requests = [
    ["a lower-case get", "get / HTTP/1.1\r\nHost: proxy\r\n\r\n"],
    [
      "FOO with a body",
      `FOO ${CHAT} HTTP/1.1\r\nHost: proxy\r\ncontent-type: application/json\r\ncontent-length: ${BODY.length}\r\n\r\n${BODY}`,
    ],
    ["a mixed-case Post", `Post ${CHAT} HTTP/1.1\r\nHost: proxy\r\n\r\n`],
  ];
  for (const [name, request] of requests) {
    await t.step(
      `${name}: 501 method_not_supported, nothing forwarded`,
      async () => {
        upstream.requests.length = 0;
        const { status, text } = await rawExchange(server.port, request!);
        strictEqual(status, 501, text);
        ok(/\r\nconnection: close\r\n/i.test(text), text);
        const error = errorOf(text);
        strictEqual(error.code, "method_not_supported");
        ok(/not supported by the incontext proxy/.test(error.message));
        ok(!/foo|get|post/i.test(error.message), error.message);
        strictEqual(upstream.requests.length, 0);
        await served();
      },
    );
  }
  await t.step("a malformed method is still a 400", async () => {
    const { status } = await rawExchange(
      server.port,
      "G@T / HTTP/1.1\r\nHost: proxy\r\n\r\n",
    );
    strictEqual(status, 400);
    await served();
  });
  await t.step(
    "behind a good request on one connection: its answer first, whole",
    async () => {
      upstream.requests.length = 0;
      const text = await rawAnswers(
        server.port,
        `GET /v1/models HTTP/1.1\r\nHost: proxy\r\n\r\nFOO ${CHAT} HTTP/1.1\r\nHost: proxy\r\n\r\n`,
      );
      // The good answer has a length or is chunked: the 501 starts where
      // it ends.
      ok(text.startsWith("HTTP/1.1 200"), text);
      const head = text.indexOf("\r\n\r\n") + 4;
      const length = /\r\ncontent-length: *(\d+)/i.exec(text.slice(0, head));
      const end = length === null
        ? text.indexOf("\r\n0\r\n\r\n", head) + 7
        : head + Number(length[1]);
      const second = text.slice(end);
      ok(second.startsWith("HTTP/1.1 501 "), text);
      strictEqual(errorOf(second).code, "method_not_supported");
      deepStrictEqual(upstream.requests.map((r) => r.path), ["/v1/models"]);
      await served();
    },
  );
});
