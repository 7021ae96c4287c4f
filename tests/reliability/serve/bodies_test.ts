/**
 * A body over `INCONTEXT_MAX_REQUEST_BYTES` never ends `incontext serve`:
 * on every budgeted route, in every framing (a declared length with the
 * bytes still arriving, chunks, `Expect: 100-continue`), from curl as users
 * run it, from Python's http.client (which sends the whole body before it
 * reads) and from raw sockets that stop half way or hang up mid-upload.
 * The answer is the proxy's own 413; the process then serves the next
 * request.
 */
import { ok, strictEqual } from "node:assert/strict";
import {
  BUDGETED_ROUTES,
  chatBody,
  chatBodyOf,
  curl,
  LIMIT,
  metric,
  metrics,
  python,
  startServe,
  stillServes,
  tempFile,
} from "./_process.ts";
import { until } from "../../_kit/hang.ts";

const encoder = new TextEncoder();

/** Reads what the server sends until it closes, or until `enough` holds. */
async function readAnswer(
  conn: Deno.Conn,
  enough: (text: string) => boolean = () => false,
): Promise<string> {
  const decoder = new TextDecoder();
  const buffer = new Uint8Array(65536);
  let text = "";
  while (!enough(text)) {
    const n = await conn.read(buffer).catch(() => null);
    if (n === null) break;
    text += decoder.decode(buffer.subarray(0, n));
  }
  return text;
}

/** Writes `bytes` in 64 KiB writes; false once the server stopped reading. */
async function writeAll(conn: Deno.Conn, bytes: Uint8Array): Promise<boolean> {
  for (let at = 0; at < bytes.length; at += 65536) {
    try {
      await conn.write(bytes.subarray(at, at + 65536));
    } catch {
      return false;
    }
  }
  return true;
}

Deno.test("incontext serve answers 413 to every body over the limit and keeps serving", async (t) => {
  await using served = await startServe();
  const { proxy } = served;
  await using big = await tempFile(chatBodyOf(3 * LIMIT));

  for (const route of BUDGETED_ROUTES) {
    await t.step(
      `${route}: curl as users run it (Expect: 100-continue, added by curl)`,
      async () => {
        const answer = await curl(`${proxy.url}${route}`, { body: big.path });
        strictEqual(answer.status, 413, answer.verbose);
        strictEqual(JSON.parse(answer.body).error.code, "request_too_large");
        // The final answer came instead of the 100: curl sent no body.
        ok(answer.verbose.includes("> Expect: 100-continue"), answer.verbose);
        ok(!answer.verbose.includes("< HTTP/1.1 100"), answer.verbose);
        await stillServes(proxy);
      },
    );

    await t.step(
      `${route}: a declared length, the bytes still arriving (no Expect)`,
      async () => {
        const answer = await curl(`${proxy.url}${route}`, {
          body: big.path,
          extra: ["-H", "Expect:"],
        });
        strictEqual(answer.status, 413, answer.verbose);
        strictEqual(JSON.parse(answer.body).error.code, "request_too_large");
        await stillServes(proxy);
      },
    );

    await t.step(`${route}: chunks`, async () => {
      const answer = await curl(`${proxy.url}${route}`, {
        body: big.path,
        extra: ["-H", "Transfer-Encoding: chunked", "-H", "Expect:"],
      });
      strictEqual(answer.status, 413, answer.verbose);
      await stillServes(proxy);
    });
  }

  await t.step(
    "Python http.client sends the whole body, then reads the 413",
    async () => {
      const ran = await python(
        `
import http.client, sys
conn = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=120)
body = b'{"model": "m", "messages": [{"role": "user", "content": "' + b"x" * (3 * ${LIMIT}) + b'"}]}'
conn.request("POST", "/v1/chat/completions", body=body, headers={"content-type": "application/json"})
response = conn.getresponse()
print(response.status, response.read().decode())
# The connection was drained, not dropped: a second request on it works.
conn.request("POST", "/v1/chat/completions", body=sys.argv[2].encode(), headers={"content-type": "application/json"})
second = conn.getresponse()
print(second.status, second.getheader("x-incontext-action"))
`,
        [String(proxy.port), chatBody()],
      );
      strictEqual(ran.code, 0, ran.stderr);
      const [first, second] = ran.stdout.trim().split("\n");
      ok(first!.startsWith("413 "), ran.stdout);
      ok(first!.includes("request_too_large"), ran.stdout);
      strictEqual(second, "200 set");
      await stillServes(proxy);
    },
  );

  await t.step("Python urllib gets the 413 as an HTTPError", async () => {
    const ran = await python(
      `
import sys, urllib.request, urllib.error
body = b"{" + b" " * (2 * ${LIMIT}) + b"}"
request = urllib.request.Request(sys.argv[1], data=body, headers={"content-type": "application/json"})
try:
    urllib.request.urlopen(request, timeout=120)
except urllib.error.HTTPError as error:
    print(error.code)
`,
      [`${proxy.url}/v1/chat/completions`],
    );
    strictEqual(ran.stdout.trim(), "413", ran.stderr);
    await stillServes(proxy);
  });

  await t.step(
    "a client that declares a length, sends part of it and hangs up",
    async () => {
      for (const route of BUDGETED_ROUTES) {
        const conn = await Deno.connect({ port: proxy.port });
        await conn.write(encoder.encode(
          `POST ${route} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${
            3 * LIMIT
          }\r\n\r\n`,
        ));
        await writeAll(conn, new Uint8Array(LIMIT + LIMIT / 2).fill(0x20));
        conn.close();
      }
      await stillServes(proxy);
    },
  );

  const uploadsGone = async () =>
    metric(
      await metrics(proxy),
      'incontext_client_disconnects_total{phase="upload"}',
    );
  const partials: [string, string][] = [
    [
      "a budgeted body within the limit",
      `POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${
        LIMIT / 2
      }\r\n\r\n{"messages": [`,
    ],
    [
      "a chunked body the proxy streams to the upstream",
      `POST /v1/embeddings HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n5\r\n{"a":\r\n`,
    ],
  ];
  for (const [what, head] of partials) {
    await t.step(
      `a client that sends part of ${what} and hangs up`,
      async () => {
        const before = await uploadsGone();
        const conn = await Deno.connect({ port: proxy.port });
        // The bytes reach the proxy before the close does.
        await conn.write(encoder.encode(head));
        conn.close();
        await until(
          async () => await uploadsGone() === before + 1,
          "the disconnect counted as the client's, during its upload",
        );
        ok(!/upstream unreachable/.test(proxy.stdout.text + proxy.stderr.text));
        await stillServes(proxy);
      },
    );
  }

  await t.step(
    "a raw client that reads the 413 while it still sends, then sends the rest",
    async () => {
      const conn = await Deno.connect({ port: proxy.port });
      await conn.write(encoder.encode(
        `POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${
          3 * LIMIT
        }\r\n\r\n`,
      ));
      const answer = readAnswer(
        conn,
        (text) => text.includes("request_too_large"),
      );
      await writeAll(conn, new Uint8Array(2 * LIMIT).fill(0x20));
      ok((await answer).startsWith("HTTP/1.1 413"), await answer);
      // The rest of the declared body is read and dropped: the connection
      // then carries the next request.
      await writeAll(conn, new Uint8Array(LIMIT).fill(0x20));
      const body = chatBody();
      await conn.write(encoder.encode(
        `POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\nconnection: close\r\n\r\n${body}`,
      ));
      const next = await readAnswer(conn);
      ok(next.includes("HTTP/1.1 200"), next);
      ok(next.includes("x-incontext-action: set"), next);
      conn.close();
      await stillServes(proxy);
    },
  );
});
