/**
 * `incontext tokenize-server` bounds what it reads as `incontext serve`
 * does: a body over `INCONTEXT_MAX_REQUEST_BYTES` gets 413 without being
 * held whole (declared or chunked, from curl, Python and raw sockets; the
 * memory it takes meanwhile is `memory_test.ts`'s), a
 * head over `INCONTEXT_MAX_HEADER_BYTES` 431, a head too slow 408, and it
 * takes a UTF-8 byte order mark, `NaN` and the infinities as vLLM does. It
 * keeps tokenizing after each.
 */
import { ok, strictEqual } from "node:assert/strict";
import {
  curl,
  LIMIT,
  python,
  startTokenizeServer,
  stillTokenizes,
  tempFile,
} from "./_process.ts";

Deno.test("incontext tokenize-server bounds what it reads", async (t) => {
  await using server = await startTokenizeServer({
    INCONTEXT_HEADERS_TIMEOUT_SECONDS: "1",
  });
  const prompt = (text: string) => JSON.stringify({ prompt: text });

  await t.step(
    "a declared body over the limit: 413, from curl as users run it",
    async () => {
      await using big = await tempFile(prompt("x".repeat(3 * LIMIT)));
      const answer = await curl(`${server.url}/tokenize`, { body: big.path });
      strictEqual(answer.status, 413, answer.verbose);
      ok(answer.body.includes("INCONTEXT_MAX_REQUEST_BYTES"), answer.body);
      ok(!answer.verbose.includes("< HTTP/1.1 100"), answer.verbose);
      await stillTokenizes(server);
    },
  );

  await t.step(
    "chunks past the limit: 413 once the limit is passed",
    async () => {
      // Python sends 40 MiB in chunks and reads the answer only at the end.
      // The server answers once past the limit, drops a few MiB more, then
      // stops reading and closes: the send fails, and the answer is there
      // to read (httpx, under the openai SDK, reads it so).
      const ran = await python(
        `
import http.client, sys
conn = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=120)
def chunks():
    yield b'{"prompt": "'
    for _ in range(40):
        yield b"x" * (1024 * 1024)
    yield b'"}'
try:
    conn.request("POST", "/tokenize", body=chunks(), encode_chunked=True, headers={"content-type": "application/json"})
except OSError as error:
    print(type(error).__name__)
response = conn.getresponse()
print(response.status)
`,
        [String(server.port)],
      );
      const printed = ran.stdout.trim().split("\n");
      strictEqual(printed.at(-1), "413", ran.stderr);
      ok(/Error$/.test(printed[0]!), ran.stdout);
      await stillTokenizes(server);
    },
  );

  await t.step("a client that hangs up mid-upload", async () => {
    const conn = await Deno.connect({ port: server.port });
    await conn.write(new TextEncoder().encode(
      `POST /tokenize HTTP/1.1\r\nhost: x\r\ncontent-length: ${
        LIMIT / 2
      }\r\n\r\n{"prompt": "`,
    ));
    conn.close();
    await stillTokenizes(server);
  });

  await t.step("a head over the limit: 431", async () => {
    await using headers = await tempFile(`x-big: ${"a".repeat(200_000)}\n`);
    const answer = await curl(`${server.url}/tokenize`, {
      extra: ["-H", `@${headers.path}`, "-d", prompt("hi")],
    });
    strictEqual(answer.status, 431, answer.verbose);
    await stillTokenizes(server);
  });

  await t.step("a head never finished: 408", async () => {
    const conn = await Deno.connect({ port: server.port });
    await conn.write(new TextEncoder().encode("POST /tokenize HTTP/1.1\r\n"));
    const buffer = new Uint8Array(4096);
    const n = await conn.read(buffer);
    conn.close();
    ok(n !== null);
    ok(
      new TextDecoder().decode(buffer.subarray(0, n)).startsWith(
        "HTTP/1.1 408",
      ),
    );
    await stillTokenizes(server);
  });

  await t.step(
    "a body with a UTF-8 byte order mark, as vLLM reads it",
    async () => {
      const response = await fetch(`${server.url}/tokenize`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: new Uint8Array([
          0xef,
          0xbb,
          0xbf,
          ...new TextEncoder().encode(prompt("hello")),
        ]),
      });
      strictEqual(response.status, 200);
      strictEqual((await response.json()).count, 1);
      await stillTokenizes(server);
    },
  );

  await t.step(
    "NaN and the infinities, as vLLM's json.loads reads them",
    async () => {
      const response = await fetch(`${server.url}/tokenize`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body:
          '{"prompt": "hello", "temperature": NaN, "logit_bias": {"7": -Infinity}}',
      });
      strictEqual(response.status, 200);
      strictEqual((await response.json()).count, 1);
      const refused = await fetch(`${server.url}/tokenize`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: '{"prompt": "hello", "temperature": nan}',
      });
      strictEqual(refused.status, 400);
      await refused.body?.cancel();
      await stillTokenizes(server);
    },
  );
});

Deno.test("incontext tokenize-server bounds idle and open connections as serve does", async (t) => {
  await using server = await startTokenizeServer({
    INCONTEXT_KEEPALIVE_TIMEOUT_SECONDS: "1",
    INCONTEXT_MAX_CONNECTIONS: "2",
  });
  const readToClose = async (conn: Deno.Conn) => {
    const buffer = new Uint8Array(4096);
    while (await conn.read(buffer).catch(() => null) !== null) {
      // Until the server closes it.
    }
  };

  await t.step("an idle keep-alive connection is closed", async () => {
    const conn = await Deno.connect({ port: server.port });
    const body = prompt("hi");
    await conn.write(new TextEncoder().encode(
      `POST /tokenize HTTP/1.1\r\nhost: x\r\ncontent-length: ${body.length}\r\n\r\n${body}`,
    ));
    // The answer, then nothing: the server ends the idle connection.
    await readToClose(conn);
    conn.close();
    await stillTokenizes(server);
  });

  await t.step(
    "a connection beyond INCONTEXT_MAX_CONNECTIONS is closed at once",
    async () => {
      const held = [
        await Deno.connect({ port: server.port }),
        await Deno.connect({ port: server.port }),
      ];
      const third = await Deno.connect({ port: server.port });
      await readToClose(third);
      third.close();
      // Each held connection is let go, and the server seen to close it.
      for (const conn of held) {
        await conn.closeWrite();
        await readToClose(conn);
        conn.close();
      }
      await stillTokenizes(server);
    },
  );
});

function prompt(text: string): string {
  return JSON.stringify({ prompt: text });
}
