/**
 * SIGHUP stops the three commands that serve as SIGTERM does, by the same
 * path: the listener closes, a request in flight is answered whole, and the
 * process exits with 0. `incontext serve` holds a request whose upstream
 * keeps its answer until the test releases it; `tokenize-server` and
 * `demo-upstream` hold one whose body they have begun to read (`Expect:
 * 100-continue`: the `100 Continue` says the handler reads it), sent only
 * once the listener is closed.
 */
import { ok, strictEqual } from "node:assert/strict";
import { HANG_MS, unlessHung } from "../_kit/hang.ts";
import { freePort, spawnCli } from "../_kit/cli_process.ts";
import { spawnProxy } from "./_proxy_spawn.ts";
import { startTokenizeServer } from "./serve/_process.ts";
import {
  bodyOf,
  HELD_BODY,
  holdUpload,
  readToClose,
  refusesConnections,
  serveHolding,
} from "./_in_flight.ts";

const SIGNALS = ["SIGTERM", "SIGHUP"] as const;

for (const signal of SIGNALS) {
  Deno.test(`incontext serve on ${signal} refuses new connections, answers the request in flight whole and exits with 0`, async () => {
    await using upstream = serveHolding();
    await using proxy = await spawnProxy(upstream.url, {
      INCONTEXT_TOKENIZER_URL: `${upstream.url}/tokenize`,
      // The grace period never decides: the request ends when released.
      INCONTEXT_SHUTDOWN_GRACE_SECONDS: String(HANG_MS / 1000),
    });
    const busy = await Deno.connect({
      hostname: "127.0.0.1",
      port: proxy.port,
    });
    try {
      await busy.write(
        new TextEncoder().encode("GET /slow HTTP/1.1\r\nhost: x\r\n\r\n"),
      );
      const answer = readToClose(busy);
      await unlessHung("the request in flight upstream", upstream.arrived);

      proxy.child.kill(signal);
      ok(await refusesConnections(proxy.port), "a new connection was accepted");
      upstream.release();
      const text = await unlessHung("the answer in flight", answer);
      ok(text.startsWith("HTTP/1.1 200"), text.slice(0, 200));
      strictEqual(bodyOf(text), HELD_BODY);

      const status = await unlessHung("the proxy's exit", proxy.child.status);
      strictEqual(status.code, 0, proxy.stderr.text);
      ok(
        await proxy.stdout.waitFor(
          new RegExp(`stopping: finishing requests in flight \\(${signal}\\)`),
          HANG_MS,
        ),
        proxy.stdout.text,
      );
    } finally {
      busy.close();
    }
  });

  Deno.test(`incontext tokenize-server on ${signal} refuses new connections, answers the request in flight whole and exits with 0`, async () => {
    await using server = await startTokenizeServer();
    using upload = await holdUpload(
      server.port,
      "/tokenize",
      JSON.stringify({ prompt: "hello" }),
    );

    server.child.kill(signal);
    ok(await refusesConnections(server.port), "a new connection was accepted");
    const text = await unlessHung("the answer in flight", upload.finish());
    ok(text.startsWith("HTTP/1.1 200"), text);
    strictEqual(JSON.parse(bodyOf(text)).count, 1);

    const status = await unlessHung("the exit", server.child.status);
    strictEqual(status.code, 0, server.stderr.text);
  });

  Deno.test(`incontext demo-upstream on ${signal} refuses new connections, answers the request in flight whole and exits with 0`, async () => {
    const port = freePort();
    await using demo = spawnCli([
      "demo-upstream",
      "--listen",
      `127.0.0.1:${port}`,
    ]);
    ok(
      /listening on/.test(await demo.stdout.waitFor(/listening on/)),
      demo.stderr.text,
    );
    using upload = await holdUpload(
      port,
      "/v1/chat/completions",
      JSON.stringify({
        model: "m",
        messages: [{ role: "user", content: "still there?" }],
      }),
    );

    demo.child.kill(signal);
    ok(await refusesConnections(port), "a new connection was accepted");
    const text = await unlessHung("the answer in flight", upload.finish());
    ok(text.startsWith("HTTP/1.1 200"), text);
    strictEqual(
      JSON.parse(bodyOf(text)).choices[0].message.content,
      "Noted: 1 messages.",
    );

    const status = await unlessHung("the exit", demo.child.status);
    strictEqual(status.code, 0, demo.stderr.text);
  });
}
