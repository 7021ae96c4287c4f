/**
 * The status line a client reads carries a reason phrase: through
 * `incontext serve`, the upstream's own (`HTTP/1.1 200 OK Upstream` stays
 * so), and on the answers of `serve`, `tokenize-server` and
 * `demo-upstream` themselves, the standard one (`HTTP/1.1 413 Payload Too
 * Large`), as curl and Python's http.client read them. A phrase not in
 * printable ASCII is not passed on: the standard one is written instead.
 */
import { deepStrictEqual } from "node:assert/strict";
import { STATUS_CODES } from "node:http";
import {
  CHAT,
  chatBody,
  curl,
  LIMIT,
  run,
  startDemoUpstream,
  startTokenizeServer,
  stillAnswers,
  stillServes,
  stillTokenizes,
  tempFile,
} from "./_process.ts";
import { spawnProxy } from "../_proxy_spawn.ts";
import { createFakeUpstreamHandler } from "../../../src/testing/mod.ts";
import { startHttpServer } from "../../../src/server/http_server.ts";

/** One request: its method, path and body. */
type Ask = readonly [method: string, path: string, body?: string];

/** What follows `HTTP/1.1 ` on the status line curl prints for each request. */
async function curlLines(url: string, asks: readonly Ask[]) {
  const lines: string[] = [];
  for (const [method, path, body] of asks) {
    await using file = await tempFile(body ?? "");
    const answer = await curl(`${url}${path}`, {
      ...(body === undefined ? {} : { body: file.path }),
      extra: ["-X", method],
    });
    lines.push(/^< HTTP\/1\.1 (.*?)\r?$/m.exec(answer.verbose)?.[1] ?? "");
  }
  return lines;
}

/** The status and reason Python's http.client reads for each request. */
async function pythonLines(port: number, asks: readonly Ask[]) {
  // The requests come on standard input: a body over the limit is longer
  // than an argument may be.
  const ran = await run(
    "/usr/bin/python3",
    [
      "-c",
      `
import http.client, json, sys
for method, path, body in json.load(sys.stdin):
    conn = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=60)
    conn.request(method, path, body=None if body is None else body.encode(), headers={"content-type": "application/json"})
    response = conn.getresponse()
    response.read()
    print(response.status, response.reason)
    conn.close()
`,
      String(port),
    ],
    JSON.stringify(asks.map(([m, p, b]) => [m, p, b ?? null])),
  );
  return ran.stdout.trim().split("\n");
}

/** Both clients read `expected` for `asks`. */
async function readAs(
  { url, port }: { url: string; port: number },
  asks: readonly Ask[],
  expected: readonly string[],
): Promise<void> {
  deepStrictEqual(await curlLines(url, asks), expected, "curl");
  deepStrictEqual(await pythonLines(port, asks), expected, "Python");
}

/** The standard status line of `status`. */
function standard(status: number): string {
  return `${status} ${STATUS_CODES[status]}`;
}

const OVER_LIMIT = JSON.stringify({ prompt: "x".repeat(LIMIT) });

Deno.test("incontext serve passes the upstream's reason phrase on and writes the standard one on its own answers", async (t) => {
  const closing = new AbortController();
  const fake = createFakeUpstreamHandler({
    recordRequests: false,
    signal: closing.signal,
  });
  // The fake vLLM, each answer's phrase its own: "OK Upstream", and
  // "Très Bien" on /v1/accent, which is not printable ASCII.
  await using upstream = await startHttpServer(async (request) => {
    const accent = new URL(request.url).pathname === "/v1/accent";
    const answer = await fake.handler(
      accent ? new Request(new URL("/v1/models", request.url)) : request,
    );
    return new Response(answer.body, {
      status: answer.status,
      statusText: accent
        ? "Très Bien"
        : `${STATUS_CODES[answer.status]} Upstream`,
      headers: answer.headers,
    });
  }, {
    hostname: "127.0.0.1",
    port: 0,
    headersTimeoutMs: 10_000,
    requestTimeoutMs: 60_000,
    keepAliveTimeoutMs: 1_000,
    maxConnections: 64,
    backlog: 64,
  });
  const upstreamUrl = `http://127.0.0.1:${upstream.port}`;
  await using proxy = await spawnProxy(upstreamUrl, {
    INCONTEXT_TOKENIZER_URL: `${upstreamUrl}/tokenize`,
    INCONTEXT_MAX_REQUEST_BYTES: String(LIMIT),
  });

  await t.step(
    "the upstream's answers, budgeted or passed through",
    async () => {
      await readAs(proxy, [
        ["POST", CHAT, chatBody()],
        ["GET", "/v1/models"],
        ["GET", "/v1/nothing"],
      ], ["200 OK Upstream", "200 OK Upstream", "404 Not Found Upstream"]);
      await stillServes(proxy);
    },
  );

  await t.step(
    "a phrase not in printable ASCII: the standard one",
    async () => {
      await readAs(proxy, [["GET", "/v1/accent"]], [standard(200)]);
      await stillServes(proxy);
    },
  );

  await t.step("the proxy's own answers", async () => {
    await readAs(proxy, [
      ["GET", "/incontext/livez"],
      ["GET", "/incontext/nothing"],
      ["POST", "/incontext/livez", "{}"],
      ["POST", CHAT, OVER_LIMIT],
    ], [standard(200), standard(404), standard(405), standard(413)]);
    await stillServes(proxy);
  });
  closing.abort();
});

Deno.test("incontext tokenize-server writes the standard reason phrase", async (t) => {
  await using server = await startTokenizeServer();
  await t.step("on every answer", async () => {
    await readAs(server, [
      ["POST", "/tokenize", JSON.stringify({ prompt: "hi" })],
      ["GET", "/tokenize"],
      ["POST", "/nothing", "{}"],
      ["POST", "/tokenize", "{nope"],
      ["POST", "/tokenize", OVER_LIMIT],
    ], [
      standard(200),
      standard(405),
      standard(404),
      standard(400),
      standard(413),
    ]);
    await stillTokenizes(server);
  });
});

Deno.test("incontext demo-upstream writes the standard reason phrase", async (t) => {
  await using demo = await startDemoUpstream();
  await t.step("on every answer", async () => {
    await readAs(demo, [
      ["GET", "/v1/models"],
      ["GET", "/health"],
      ["GET", "/v1/nothing"],
      ["POST", CHAT, OVER_LIMIT],
    ], [standard(200), standard(200), standard(404), standard(413)]);
    await stillAnswers(demo);
  });
});
