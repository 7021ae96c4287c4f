/**
 * Replicas sharing a store over TLS (`rediss://`), against Debian's
 * redis-server serving TLS only, with a certificate of a private authority
 * (made with Debian's openssl): trusted through INCONTEXT_SHARED_STORE_CA,
 * refused without it.
 */
import { ok, strictEqual } from "node:assert/strict";
import { serveFakeUpstream } from "../../src/testing/mod.ts";
import { startRedisServer } from "./_redis_server.ts";
import { startReplicas, waitForStores } from "./_replicas.ts";
import { selfSignedCertificate } from "./_openssl.ts";

Deno.test("replicas share counts over rediss:// with the store's authority, and refuse the store without it", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const tls = await selfSignedCertificate(dir);
    await using redis = await startRedisServer({ tls });
    ok(redis.url.startsWith("rediss://"));
    await using upstream = await serveFakeUpstream({ maxModelLen: 65536 });
    const env = {
      INCONTEXT_TOKENIZER_URL: upstream.tokenizeUrl,
      INCONTEXT_CONTEXT_LENGTH: "65536",
      INCONTEXT_COMPRESSION_WINDOW_TOKENS: "55705",
      INCONTEXT_SHARED_STORE: redis.url,
      INCONTEXT_SHARED_TIMEOUT_MS: "250",
    };
    await using trusted = await startReplicas({
      count: 2,
      upstream: upstream.url,
      env: { ...env, INCONTEXT_SHARED_STORE_CA: tls.certFile },
    });
    await waitForStores(trusted.urls, "up");
    const tokenizes = () =>
      upstream.requests.filter((r) => r.path === "/tokenize").length;
    const before = tokenizes();
    for (const url of trusted.urls) {
      const response = await fetch(`${url}/v1/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          model: "m",
          messages: [{ role: "user", content: "Counted once, over TLS" }],
          max_tokens: 100,
        }),
      });
      strictEqual(response.status, 200);
      strictEqual(response.headers.get("x-incontext-action"), "set");
      await response.body?.cancel();
    }
    // The first replica counted and stored it; the second read it over TLS.
    strictEqual(tokenizes() - before, 1);

    await using untrusted = await startReplicas({
      count: 1,
      upstream: upstream.url,
      env,
    });
    // Without the authority the handshake fails: the store is an outage.
    await waitForStores(untrusted.urls, "down");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
