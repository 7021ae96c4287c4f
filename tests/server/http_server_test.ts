/**
 * startHttpServer() writes each answer's status line as the handler's
 * Response gives it: its own reason phrase, else the standard one, and no
 * phrase for a status without one.
 */
import { deepStrictEqual } from "node:assert/strict";
import { startHttpServer } from "../../src/server/http_server.ts";

/** The status line a raw client reads for `path`. */
async function statusLine(port: number, path: string): Promise<string> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  try {
    await conn.write(
      new TextEncoder().encode(
        `GET ${path} HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n`,
      ),
    );
    let text = "";
    const buffer = new Uint8Array(4096);
    while (!text.includes("\r\n")) {
      const n = await conn.read(buffer);
      if (n === null) break;
      text += new TextDecoder().decode(buffer.subarray(0, n));
    }
    return text.slice(0, text.indexOf("\r\n"));
  } finally {
    conn.close();
  }
}

Deno.test("startHttpServer() writes the response's reason phrase, else the standard one", async () => {
  const answers: Record<string, ResponseInit> = {
    "/own": { status: 200, statusText: "Fine Thanks" },
    "/none": { status: 200 },
    "/too-large": { status: 413 },
    "/unknown": { status: 599 },
  };
  await using server = await startHttpServer(
    (request) =>
      Promise.resolve(
        new Response("x", answers[new URL(request.url).pathname]),
      ),
    {
      hostname: "127.0.0.1",
      port: 0,
      headersTimeoutMs: 10_000,
      requestTimeoutMs: 10_000,
      keepAliveTimeoutMs: 1_000,
      maxConnections: 8,
      backlog: 8,
    },
  );
  const lines = [];
  for (const path of Object.keys(answers)) {
    lines.push(await statusLine(server.port, path));
  }
  deepStrictEqual(lines, [
    "HTTP/1.1 200 Fine Thanks",
    "HTTP/1.1 200 OK",
    "HTTP/1.1 413 Payload Too Large",
    // node's own default would be "unknown".
    "HTTP/1.1 599 ",
  ]);
});
