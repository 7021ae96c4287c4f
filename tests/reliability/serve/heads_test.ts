/**
 * Every answer `incontext serve` gives before a request reaches the
 * upstream is its own, counted as the client's error and never as the
 * upstream's: a head too large (431), a malformed head (400), a head too
 * slow (408), a method its parser does not know (501), a body over the
 * limit (413), a malformed body (400), the admin token missing (401), a
 * method it cannot forward (501).
 */
import { ok, strictEqual } from "node:assert/strict";
import {
  CHAT,
  chatBody,
  curl,
  LIMIT,
  metric,
  python,
  startServe,
  stillServes,
  tempFile,
} from "./_process.ts";
import { rawExchange } from "../_raw_wire.ts";

const UNREACHABLE = 'incontext_upstream_errors_total{error="unreachable"}';

/** A raw request to `port`, answered and closed. */
function raw(port: number, text: string) {
  return rawExchange(port, text);
}

Deno.test("incontext serve gives its own answer to every request it refuses", async (t) => {
  await using served = await startServe({
    INCONTEXT_HEADERS_TIMEOUT_SECONDS: "1",
    INCONTEXT_ADMIN_TOKEN: "admin-secret-token",
  });
  const { proxy, upstream } = served;
  const refused = (status: number) =>
    `incontext_server_refusals_total{status="${status}"}`;
  const admin = { authorization: "Bearer admin-secret-token" };
  const counted = async (series: string) =>
    metric(
      await (await fetch(`${proxy.url}/incontext/metrics`, { headers: admin }))
        .text(),
      series,
    );

  await t.step(
    "a 200 KB header line: 431 from the proxy, a client error",
    async () => {
      await using headers = await tempFile(`x-big: ${"a".repeat(200_000)}\n`);
      const seen = upstream.requests.length;
      const answer = await curl(`${proxy.url}/v1/models`, {
        extra: ["-H", `@${headers.path}`],
      });
      strictEqual(answer.status, 431, answer.verbose);
      strictEqual(
        JSON.parse(answer.body).error.code,
        "request_header_too_large",
      );
      strictEqual(upstream.requests.length, seen);
      strictEqual(await counted(refused(431)), 1);
      strictEqual(await counted(UNREACHABLE), 0);
      await stillServes(proxy);
    },
  );

  await t.step(
    "a head over INCONTEXT_MAX_HEADER_BYTES from Python",
    async () => {
      const ran = await python(
        `
import http.client, sys
conn = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=60)
conn.request("GET", "/v1/models", headers={"cookie": "c" * 70000})
print(conn.getresponse().status)
`,
        [String(proxy.port)],
      );
      strictEqual(ran.stdout.trim(), "431", ran.stderr);
      await stillServes(proxy);
    },
  );

  await t.step("a malformed head: 400", async () => {
    const answer = await raw(
      proxy.port,
      "POST /v1/chat/completions HTTP/1.1\r\nhost x\r\n\r\n",
    );
    strictEqual(answer.status, 400);
    ok(answer.text.includes("malformed_request"), answer.text);
    ok(await counted(refused(400)) >= 1);
    await stillServes(proxy);
  });

  await t.step("a head never finished: 408", async () => {
    const conn = await Deno.connect({ port: proxy.port });
    await conn.write(new TextEncoder().encode("GET /v1/models HTTP/1.1\r\n"));
    const buffer = new Uint8Array(4096);
    const n = await conn.read(buffer);
    conn.close();
    ok(n !== null);
    const text = new TextDecoder().decode(buffer.subarray(0, n));
    ok(text.startsWith("HTTP/1.1 408"), text);
    strictEqual(await counted(refused(408)), 1);
    await stillServes(proxy);
  });

  await t.step(
    "a method the parser does not know, or one it cannot forward as written: 501",
    async () => {
      for (const method of ["BREW", "get", "TRACE"]) {
        const answer = await raw(
          proxy.port,
          `${method} /v1/models HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n`,
        );
        strictEqual(answer.status, 501, method);
        ok(answer.text.includes("method_not_supported"), answer.text);
      }
      await stillServes(proxy);
    },
  );

  await t.step(
    "a GET with a body: 501, the body read and dropped",
    async () => {
      const answer = await raw(
        proxy.port,
        "GET /v1/models HTTP/1.1\r\nhost: x\r\ncontent-length: 5\r\nconnection: close\r\n\r\nhello",
      );
      strictEqual(answer.status, 501);
      ok(answer.text.includes("method_not_supported"), answer.text);
      await stillServes(proxy);
    },
  );

  await t.step(
    "an expectation other than 100-continue is served, as vLLM serves it",
    async () => {
      const seen = upstream.requests.length;
      const body = chatBody();
      const answer = await raw(
        proxy.port,
        `POST ${CHAT} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\nexpect: something\r\ncontent-length: ${body.length}\r\nconnection: close\r\n\r\n${body}`,
      );
      strictEqual(answer.status, 200, answer.text);
      const sent = upstream.requests.slice(seen).find((r) => r.path === CHAT);
      strictEqual(sent?.headers.expect, undefined);
      await stillServes(proxy);
    },
  );

  await t.step("the proxy's own 4xx on the request path", async () => {
    const post = (path: string, body: string, headers = {}) =>
      fetch(`${proxy.url}${path}`, {
        method: "POST",
        headers: { "content-type": "application/json", ...headers },
        body,
      });
    const cases: [string, Promise<Response>, number, string][] = [
      ["a body that is not JSON", post(CHAT, "{nope"), 400, "invalid_json"],
      [
        "a body over the limit",
        post(CHAT, " ".repeat(LIMIT + 1)),
        413,
        "request_too_large",
      ],
      [
        "the metrics without the token",
        fetch(`${proxy.url}/incontext/metrics`),
        401,
        "unauthorized",
      ],
      [
        "a POST to an endpoint of its own",
        fetch(`${proxy.url}/incontext/livez`, { method: "POST", body: "x" }),
        405,
        "method_not_allowed",
      ],
      [
        "an endpoint of its own that does not exist",
        fetch(`${proxy.url}/incontext/nope`),
        404,
        "not_found",
      ],
    ];
    for (const [what, answer, status, code] of cases) {
      const response = await answer;
      strictEqual(response.status, status, what);
      strictEqual((await response.json()).error.code, code, what);
    }
    strictEqual(await counted(UNREACHABLE), 0);
    await stillServes(proxy);
  });

  await t.step(
    "the same requests again on one keep-alive connection",
    async () => {
      const ran = await python(
        `
import http.client, sys
conn = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=60)
for body in ["{nope", " " * (${LIMIT} + 1), sys.argv[2]]:
    conn.request("POST", "/v1/chat/completions", body=body.encode(), headers={"content-type": "application/json"})
    response = conn.getresponse()
    response.read()
    print(response.status)
`,
        [String(proxy.port), chatBody()],
      );
      strictEqual(ran.stdout.trim(), "400\n413\n200", ran.stderr);
      await stillServes(proxy);
    },
  );
});
