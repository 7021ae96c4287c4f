// Covers: src/server/http_server.ts
/**
 * The server `incontext serve` runs (node:http behind startHttpServer) holds
 * what the hostile probes ask of Deno.serve: smuggling and injection shapes
 * get a 4xx with nothing forwarded, odd headers and a 60 KB header pass, a
 * 1 MB head is refused, an absolute URI stays on the upstream, and methods
 * fetch cannot send get the proxy's own 501.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import { FakeBackend, serveFakeUpstream } from "../../src/testing/mod.ts";
import { createProxyHandler } from "../../src/proxy/mod.ts";
import { smugglingRequests } from "../reliability/_proxy_hostile_cases.ts";
import {
  connectionBounds,
  startHttpServer,
} from "../../src/server/http_server.ts";

const CHAT = "/v1/chat/completions";

/** Sends raw bytes and returns the status line ("" when the server closed without one). */
async function rawStatus(port: number, request: string): Promise<string> {
  const connection = await Deno.connect({ hostname: "127.0.0.1", port });
  let text = "";
  try {
    await connection.write(
      Uint8Array.from(request, (c) => c.charCodeAt(0) & 0xff),
    );
    const buffer = new Uint8Array(4096);
    while (!text.includes("\r\n")) {
      const n = await connection.read(buffer);
      if (n === null) break;
      text += new TextDecoder().decode(buffer.subarray(0, n));
    }
  } catch {
    // Reset: no status line.
  } finally {
    connection.close();
  }
  return text.split("\r\n")[0]!;
}

Deno.test("startHttpServer() refuses smuggling and keeps the proxy's forwarding rules", async (t) => {
  await using upstream = await serveFakeUpstream({ maxModelLen: 65536 });
  const handler = createProxyHandler({
    upstream: upstream.url,
    window: 55705,
    contextLength: 65536,
    backend: new FakeBackend({ count: 100 }),
  });
  await using server = await startHttpServer(handler, {
    hostname: "127.0.0.1",
    port: 0,
    headersTimeoutMs: 10_000,
    requestTimeoutMs: 20_000,
    keepAliveTimeoutMs: 1_000,
    maxConnections: 64,
    backlog: 64,
  });
  const url = `http://127.0.0.1:${server.port}`;
  const works = async () => {
    const response = await fetch(`${url}${CHAT}`, {
      method: "POST",
      headers: { "content-type": "application/json", connection: "close" },
      body: JSON.stringify({
        model: "m",
        messages: [{ role: "user", content: "hi" }],
      }),
    });
    strictEqual(response.status, 200);
    strictEqual(response.headers.get("x-incontext-action"), "set");
    await response.body?.cancel();
  };
  const body = JSON.stringify({ model: "m", messages: [] });
  const refused: [string, string][] = [
    ...smugglingRequests(CHAT, body),
    [
      "a 1 MB header",
      `GET /v1/models HTTP/1.1\r\nHost: proxy\r\nX-Huge: ${
        "a".repeat(1_000_000)
      }\r\n\r\n`,
    ],
  ];
  for (const [name, request] of refused) {
    await t.step(`${name}: 4xx or closed, nothing forwarded`, async () => {
      upstream.requests.length = 0;
      const status = await rawStatus(server.port, request);
      ok(/^HTTP\/1\.1 4\d\d/.test(status) || status === "", status);
      strictEqual(upstream.requests.length, 0);
      await works();
    });
  }
  await t.step(
    "odd names, Latin-1 values and a 60 KB header pass",
    async () => {
      upstream.requests.length = 0;
      const odd = "x-odd!#$%&'*+.^_`|~";
      const response = await fetch(`${url}/v1/models`, {
        headers: {
          [odd]: "v",
          "x-latin-1": "caf\xe9",
          "x-big": "a".repeat(60_000),
        },
      });
      strictEqual(response.status, 200);
      await response.body?.cancel();
      const { headers } = upstream.requests[0]!;
      strictEqual(headers[odd], "v");
      strictEqual(headers["x-latin-1"], "caf\xe9");
      strictEqual(headers["x-big"]?.length, 60_000);
    },
  );
  await t.step("an absolute URI stays on the upstream", async () => {
    upstream.requests.length = 0;
    const status = await rawStatus(
      server.port,
      "GET http://evil.example/v1/models HTTP/1.1\r\nHost: proxy\r\nConnection: close\r\n\r\n",
    );
    ok(status.startsWith("HTTP/1.1 200"), status);
    strictEqual(upstream.requests[0]?.path, "/v1/models");
  });
  for (const method of ["TRACE", "TRACK", "CONNECT"]) {
    await t.step(
      `${method}: the proxy's own answer, nothing forwarded`,
      async () => {
        upstream.requests.length = 0;
        const target = method === "CONNECT" ? "evil.example:443" : "/v1/models";
        const status = await rawStatus(
          server.port,
          `${method} ${target} HTTP/1.1\r\nHost: proxy\r\nConnection: close\r\n\r\n`,
        );
        ok(/^HTTP\/1\.1 (4\d\d|501)/.test(status) || status === "", status);
        strictEqual(upstream.requests.length, 0);
      },
    );
  }
  await t.step("a streamed answer streams through", async () => {
    const response = await fetch(`${url}${CHAT}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        model: "m",
        stream: true,
        messages: [{ role: "user", content: "hi" }],
      }),
    });
    strictEqual(response.status, 200);
    ok((await response.text()).includes("data: [DONE]"));
  });
});

Deno.test("connectionBounds() keeps the cap and the backlog within the open-file limit", () => {
  const limits = (files: number) =>
    `Limit                     Soft Limit           Hard Limit           Units\nMax open files            ${files}                 ${files}                 files\n`;
  deepStrictEqual(connectionBounds(512, undefined), {
    maxConnections: 512,
    backlog: 511,
  });
  deepStrictEqual(connectionBounds(512, limits(20000)), {
    maxConnections: 512,
    backlog: 511,
  });
  // (1024 - 32 - 128) / 2
  deepStrictEqual(connectionBounds(512, limits(1024)), {
    maxConnections: 432,
    backlog: 128,
  });
  deepStrictEqual(connectionBounds(1000, limits(256)), {
    maxConnections: 96,
    backlog: 32,
  });
  deepStrictEqual(connectionBounds(512, limits(40)).maxConnections, 1);
});
