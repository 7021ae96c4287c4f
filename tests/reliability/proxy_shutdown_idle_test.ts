/**
 * Shutdown waits for exchanges, not for connections: with a 60 s grace, a
 * SIGTERM closes at once a keep-alive connection left idle by `fetch` and
 * one that never carried a request (`fetch` opens such spares), lets the
 * request in flight finish whole with `connection: close`, and the process
 * exits as soon as it is answered, before the grace is over.
 */
import { ok, strictEqual } from "node:assert/strict";
import { unlessHung } from "../_kit/hang.ts";
import { spawnProxy } from "./_proxy_spawn.ts";

const BODY = "x".repeat(100_000);

/** An upstream that holds `/slow` until released; anything else gets `{}`. */
function serveHolding() {
  const arrived = Promise.withResolvers<void>();
  const release = Promise.withResolvers<void>();
  const server = Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen() {} },
    async (request) => {
      await request.body?.cancel();
      if (new URL(request.url).pathname !== "/slow") {
        return Response.json({});
      }
      arrived.resolve();
      await release.promise;
      return new Response(BODY);
    },
  );
  return {
    url: `http://127.0.0.1:${server.addr.port}`,
    arrived: arrived.promise,
    release: () => release.resolve(),
    async [Symbol.asyncDispose]() {
      release.resolve();
      await server.shutdown();
    },
  };
}

/** Reads until the server closes the connection. */
async function readToClose(conn: Deno.Conn): Promise<string> {
  let text = "";
  const buffer = new Uint8Array(65536);
  try {
    for (;;) {
      const n = await conn.read(buffer);
      if (n === null) return text;
      text += new TextDecoder().decode(buffer.subarray(0, n));
    }
  } catch {
    // A reset closes it too.
    return text;
  }
}

Deno.test("serve closes idle connections on SIGTERM and exits once the last exchange ends", async () => {
  await using upstream = serveHolding();
  await using proxy = await spawnProxy(upstream.url, {
    INCONTEXT_TOKENIZER_URL: `${upstream.url}/tokenize`,
    INCONTEXT_SHUTDOWN_GRACE_SECONDS: "60",
    INCONTEXT_KEEPALIVE_TIMEOUT_SECONDS: "600",
  });
  // An idle keep-alive connection in fetch's pool.
  using client = Deno.createHttpClient({});
  const idle = await fetch(`${proxy.url}/v1/models`, { client });
  strictEqual(idle.status, 200);
  await idle.body?.cancel();
  const connect = () =>
    Deno.connect({ hostname: "127.0.0.1", port: proxy.port });
  const spare = await connect();
  const busy = await connect();
  try {
    await busy.write(
      new TextEncoder().encode("GET /slow HTTP/1.1\r\nhost: x\r\n\r\n"),
    );
    const answer = readToClose(busy);
    await unlessHung("the request in flight upstream", upstream.arrived);

    proxy.child.kill("SIGTERM");
    strictEqual(await unlessHung("the spare closed", readToClose(spare)), "");
    upstream.release();
    const text = await unlessHung("the answer in flight", answer);
    ok(text.startsWith("HTTP/1.1 200"), text.slice(0, 200));
    ok(/\r\nconnection: close\r\n/i.test(text), text.slice(0, 400));
    strictEqual(text.slice(text.indexOf("\r\n\r\n") + 4), BODY);

    const status = await unlessHung("the proxy's exit", proxy.child.status);
    strictEqual(status.code, 0, proxy.stderr.text);
    const output = proxy.stdout.text + proxy.stderr.text;
    ok(!/grace period of 60 s over/.test(output), output.slice(-2000));
  } finally {
    spare.close();
    busy.close();
  }
});
