/**
 * `incontext serve` in front of an HTTPS upstream whose certificate a private
 * authority signed (both made with Debian's openssl): trusted through
 * Deno's `DENO_CERT`, the budgeted request reaches it exactly; without the
 * authority the handshake fails and the client gets 502 `upstream_unreachable`.
 */
import { ok, strictEqual } from "node:assert/strict";
import { serveFakeUpstream } from "../../src/testing/mod.ts";
import { freePort, spawnCli } from "../_kit/cli_process.ts";
import { authoritySignedCertificate } from "./_openssl.ts";

Deno.test("incontext serve reaches an HTTPS upstream signed by a private authority given in DENO_CERT", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const { authority, cert, key } = await authoritySignedCertificate(dir);
    const seen: { path: string; body: string }[] = [];
    await using upstream = Deno.serve({
      hostname: "127.0.0.1",
      port: 0,
      cert,
      key,
      onListen() {},
    }, async (request) => {
      const path = new URL(request.url).pathname;
      seen.push({ path, body: await request.text() });
      if (path === "/v1/models") {
        return Response.json({
          data: [{ id: "m", max_model_len: 65536 }],
        });
      }
      return Response.json({
        choices: [{ message: { role: "assistant", content: "ok" } }],
        usage: { prompt_tokens: 10, completion_tokens: 1, total_tokens: 11 },
      });
    });
    await using tokenizer = await serveFakeUpstream({ maxModelLen: 65536 });
    const env = (trusted: boolean) => ({
      INCONTEXT_UPSTREAM_URL: `https://127.0.0.1:${upstream.addr.port}`,
      INCONTEXT_TOKENIZER_URL: tokenizer.tokenizeUrl,
      INCONTEXT_CONTEXT_LENGTH: "65536",
      INCONTEXT_COMPRESSION_WINDOW_TOKENS: "55705",
      ...(trusted ? { DENO_CERT: authority } : {}),
    });
    const chat = async (url: string) =>
      await fetch(`${url}/v1/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          model: "m",
          messages: [{ role: "user", content: "over TLS" }],
          max_tokens: 65536,
        }),
      });

    for (const trusted of [true, false]) {
      const port = freePort();
      await using proxy = spawnCli(
        ["serve", "--listen", `127.0.0.1:${port}`],
        { env: env(trusted) },
      );
      // The proxy logs to its standard output.
      const log = await proxy.stdout.waitFor(/listening on/);
      ok(/listening on/.test(log), log);
      const url = `http://127.0.0.1:${port}`;
      seen.length = 0;
      const response = await chat(url);
      const text = await response.text();
      if (trusted) {
        strictEqual(response.status, 200, text);
        const sent = seen.find((s) => s.path === "/v1/chat/completions");
        ok(sent !== undefined);
        const body = JSON.parse(sent.body);
        ok(body.max_tokens > 0 && body.max_tokens < 55705, sent.body);
      } else {
        strictEqual(response.status, 502, text);
        ok(text.includes("upstream_unreachable"));
        strictEqual(
          seen.filter((s) => s.path === "/v1/chat/completions").length,
          0,
        );
      }
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
