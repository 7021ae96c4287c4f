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
import { HELD_BODY, readToClose, serveHolding } from "./_in_flight.ts";

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
    strictEqual(text.slice(text.indexOf("\r\n\r\n") + 4), HELD_BODY);

    const status = await unlessHung("the proxy's exit", proxy.child.status);
    strictEqual(status.code, 0, proxy.stderr.text);
    const output = proxy.stdout.text + proxy.stderr.text;
    ok(!/grace period of 60 s over/.test(output), output.slice(-2000));
  } finally {
    spare.close();
    busy.close();
  }
});
