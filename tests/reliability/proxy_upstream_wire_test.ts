/**
 * What the upstream sees and says on the wire, with `incontext serve` in
 * front of it as a process. A body the proxy refuses never reaches the
 * upstream, not even in part. An upstream that answers before it has read
 * a request's body (a 401, a 413) and closes its connection at once gets
 * that answer passed on, status and body, on budgeted and forwarded
 * routes, over a fresh connection and over one the pool kept alive, and
 * counted as the upstream's answer; that upstream is Python's socket
 * server in a process of its own, as a real one would be.
 *
 * Covers: src/proxy/upstream_socket.ts, src/proxy/exact_fetch.ts, src/proxy/handler.ts
 */
import { deepStrictEqual, strictEqual } from "node:assert/strict";
import { serveFakeUpstream } from "../../src/testing/mod.ts";
import { spawnProxy } from "./_proxy_spawn.ts";
import { rawResponse, serveRaw } from "./_raw_wire.ts";
import { BUDGETED_ROUTES, metric, metrics } from "./serve/_process.ts";

/**
 * The upstream: a body of up to 64 KiB is read and answered 200, keeping
 * the connection; a longer one is answered at once, before any of it is
 * read (401 on `/v1/chat/completions`, 413 elsewhere), and the connection
 * closed. It prints its port once it listens.
 */
const EARLY_ANSWERING_UPSTREAM = `
import json, socket, socketserver, sys

class Handler(socketserver.BaseRequestHandler):
    def handle(self):
        conn, data = self.request, b""
        while True:
            while b"\\r\\n\\r\\n" not in data:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                data += chunk
            head, data = data.split(b"\\r\\n\\r\\n", 1)
            lines = head.decode("latin-1").split("\\r\\n")
            path = lines[0].split(" ")[1]
            length = 0
            for line in lines[1:]:
                name, _, value = line.partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value)
            if length > 65536:
                status = "401 Unauthorized" if path == "/v1/chat/completions" else "413 Payload Too Large"
                body = json.dumps({"error": {"message": status, "code": status[:3]}}, separators=(",", ":")).encode()
                conn.sendall(b"HTTP/1.1 " + status.encode() + b"\\r\\ncontent-type: application/json\\r\\ncontent-length: "
                             + str(len(body)).encode() + b"\\r\\nconnection: close\\r\\n\\r\\n" + body)
                conn.close()
                return
            while len(data) < length:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                data += chunk
            data = data[length:]
            body = json.dumps({"data": [{"id": "m", "max_model_len": 8388608}]}).encode()
            conn.sendall(b"HTTP/1.1 200 OK\\r\\ncontent-type: application/json\\r\\ncontent-length: "
                         + str(len(body)).encode() + b"\\r\\n\\r\\n" + body)

class Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

with Server(("127.0.0.1", 0), Handler) as server:
    print(server.server_address[1], flush=True)
    server.serve_forever()
`;

/** The Python upstream as a process, stopped on disposal. */
async function startEarlyAnswering(): Promise<
  { readonly url: string } & AsyncDisposable
> {
  const child = new Deno.Command("/usr/bin/python3", {
    args: ["-c", EARLY_ANSWERING_UPSTREAM],
    stdin: "null",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const lines = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  const { value } = await lines.read();
  lines.releaseLock();
  return {
    url: `http://127.0.0.1:${Number(value?.trim())}`,
    async [Symbol.asyncDispose]() {
      child.kill("SIGKILL");
      await child.status;
      await child.stdout.cancel().catch(() => {});
    },
  };
}

/** A body for `route` (chat unless given) of about `bytes` bytes, words of its own. */
function bodyOf(bytes: number, route = "/v1/chat/completions"): string {
  const text = `${crypto.randomUUID()} ${"x".repeat(bytes)}`;
  return JSON.stringify(
    route === "/v1/completions"
      ? { model: "m", prompt: text }
      : route === "/v1/responses"
      ? { model: "m", input: text }
      : { model: "m", messages: [{ role: "user", content: text }] },
  );
}

const ROUNDS = 20;

Deno.test("incontext serve passes on an upstream's answer given before it read the body", async (t) => {
  await using tokenizer = await serveFakeUpstream({ maxModelLen: 8388608 });
  await using upstream = await startEarlyAnswering();
  await using proxy = await spawnProxy(upstream.url, {
    INCONTEXT_TOKENIZER_URL: tokenizer.tokenizeUrl,
    INCONTEXT_MAX_REQUEST_BYTES: String(16 * 1024 * 1024),
    // Room for a 10 MB prompt at the fake's 4 characters a token.
    INCONTEXT_CONTEXT_LENGTH: "8388608",
    INCONTEXT_COMPRESSION_WINDOW_TOKENS: "8000000",
  });
  const post = async (path: string, body: string) => {
    const response = await fetch(`${proxy.url}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body,
    });
    return `${response.status} ${await response.text()}`;
  };
  const answered = (status: string) =>
    `${status.slice(0, 3)} ${
      JSON.stringify({ error: { message: status, code: status.slice(0, 3) } })
    }`;
  const cases = [
    ["/v1/chat/completions", "401 Unauthorized", "budgeted"],
    ["/v1/files", "413 Payload Too Large", "forwarded"],
  ] as const;
  for (const [path, status, route] of cases) {
    for (const pooled of [false, true]) {
      await t.step(
        `${route}, over ${pooled ? "a pooled" : "a fresh"} connection`,
        async () => {
          const seen: string[] = [];
          for (let i = 0; i < ROUNDS; i++) {
            // A short request leaves its connection in the pool; without
            // one, each long body goes over a new connection, as the
            // upstream closed the last.
            if (pooled) {
              strictEqual((await post(path, "{}")).slice(0, 3), "200");
            }
            seen.push(await post(path, bodyOf(10 * 1024 * 1024)));
          }
          deepStrictEqual(seen, Array(ROUNDS).fill(answered(status)));
        },
      );
    }
  }
  const text = await metrics(proxy);
  strictEqual(
    metric(text, 'incontext_upstream_errors_total{error="unreachable"}'),
    0,
  );
  strictEqual(
    metric(text, 'incontext_upstream_responses_total{status="401"}'),
    2 * ROUNDS,
  );
  strictEqual(
    metric(text, 'incontext_upstream_responses_total{status="413"}'),
    2 * ROUNDS,
  );
});

Deno.test("incontext serve never shows the upstream a body it refuses", async () => {
  // The upstream on a raw socket records every request it sees the head of,
  // whole or torn; the fake vLLM beside it counts.
  await using tokenizer = await serveFakeUpstream();
  await using upstream = serveRaw(() => rawResponse('{"data":[]}'));
  await using proxy = await spawnProxy(upstream.url, {
    INCONTEXT_TOKENIZER_URL: tokenizer.tokenizeUrl,
    INCONTEXT_ON_EXHAUSTED: "reject",
  });
  for (const route of BUDGETED_ROUTES) {
    // About 62,500 tokens at the fake's 4 characters a token: past the
    // window, and long enough to take several writes to send.
    const response = await fetch(`${proxy.url}${route}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: bodyOf(250_000, route),
    });
    strictEqual(response.status, 400, await response.text());
    strictEqual(response.headers.get("x-incontext-action"), "compress");
  }
  deepStrictEqual(
    upstream.requests.filter(({ line }) => !line.startsWith("GET ")),
    [],
  );
});
