/**
 * The proxy's own pages that show client-chosen strings or internals can be
 * closed: `/incontext/context` turned off, and `/incontext/metrics` and
 * `/incontext/context` put behind INCONTEXT_ADMIN_TOKEN; health stays open.
 */
import { ok, strictEqual, throws } from "node:assert/strict";
import { loadConfig } from "../../src/config/mod.ts";
import { createProxyHandler, type ProxyOptions } from "../../src/proxy/mod.ts";
import { FakeBackend } from "../../src/testing/mod.ts";
import { spawnProxy } from "./_proxy_spawn.ts";

function proxy(options: Partial<ProxyOptions>) {
  return createProxyHandler({
    upstream: "http://upstream.test",
    window: 55705,
    contextLength: 65536,
    backend: new FakeBackend({ count: 5 }),
    fetch: () => Promise.resolve(Response.json({})),
    ...options,
  });
}

async function status(
  handler: ReturnType<typeof proxy>,
  path: string,
  authorization?: string,
): Promise<number> {
  const response = await handler(
    new Request(`http://proxy.test${path}`, {
      headers: authorization === undefined ? {} : { authorization },
    }),
  );
  await response.body?.cancel();
  return response.status;
}

const encoder = new TextEncoder();

Deno.test("createProxyHandler() guards its own endpoints as configured", async (t) => {
  await t.step("by default every endpoint is open", async () => {
    const open = proxy({});
    strictEqual(await status(open, "/incontext/metrics"), 200);
    strictEqual(await status(open, "/incontext/context"), 200);
  });
  await t.step("contextEndpoint: false answers 404", async () => {
    const closed = proxy({ contextEndpoint: false });
    strictEqual(await status(closed, "/incontext/context"), 404);
    strictEqual(await status(closed, "/incontext/metrics"), 200);
  });
  await t.step("adminToken: metrics and context need it", async () => {
    const guarded = proxy({ adminToken: "s3cret-admin" });
    for (const path of ["/incontext/metrics", "/incontext/context"]) {
      strictEqual(await status(guarded, path), 401, path);
      strictEqual(await status(guarded, path, "Bearer wrong"), 401, path);
      strictEqual(await status(guarded, path, "Bearer s3cret-admi"), 401);
      strictEqual(await status(guarded, path, "Bearer s3cret-admin2"), 401);
      strictEqual(await status(guarded, path, "s3cret-admin"), 401, path);
      strictEqual(await status(guarded, path, "Bearer s3cret-admin"), 200);
    }
    const denied = await guarded(
      new Request("http://proxy.test/incontext/context"),
    );
    strictEqual(
      denied.headers.get("www-authenticate"),
      'Bearer realm="incontext", Basic realm="incontext", charset="UTF-8"',
    );
    const body = await denied.text();
    ok(body.includes('"unauthorized"'));
    ok(!body.includes("s3cret"));
  });
  await t.step(
    "adminToken: Basic credentials with the token as password open them, as a browser sends them",
    async () => {
      const guarded = proxy({ adminToken: "s3cret-admin" });
      const basic = (pair: string) =>
        `Basic ${btoa(String.fromCharCode(...encoder.encode(pair)))}`;
      for (
        const path of [
          "/incontext/",
          "/incontext/metrics",
          "/incontext/context",
        ]
      ) {
        strictEqual(
          await status(guarded, path, basic("ops:s3cret-admin")),
          200,
        );
        strictEqual(await status(guarded, path, basic(":s3cret-admin")), 200);
        strictEqual(await status(guarded, path, basic("s3cret-admin")), 401);
        strictEqual(await status(guarded, path, basic("ops:s3cret-admi")), 401);
        strictEqual(await status(guarded, path, basic("s3cret-admin:x")), 401);
        strictEqual(await status(guarded, path, "Basic !!!"), 401, path);
      }
      const page = await guarded(new Request("http://proxy.test/incontext/"));
      strictEqual(page.status, 401);
      // The page's challenge is the one a browser answers with its prompt.
      strictEqual(
        page.headers.get("www-authenticate"),
        'Basic realm="incontext", charset="UTF-8"',
      );
      await page.body?.cancel();
    },
  );
  await t.step("health checks stay open", async () => {
    const guarded = proxy({ adminToken: "s3cret-admin" });
    const code = await status(guarded, "/incontext/healthz");
    ok(code === 200 || code === 503, String(code));
  });
  await t.step("a blank token is refused at creation", () => {
    throws(() => proxy({ adminToken: " " }), TypeError);
  });
});

Deno.test("loadConfig() reads INCONTEXT_ADMIN_TOKEN and INCONTEXT_CONTEXT_ENDPOINT", () => {
  const base = { INCONTEXT_TOKENIZER_URL: "http://127.0.0.1:8000/tokenize" };
  const defaults = loadConfig(base);
  strictEqual(defaults.adminToken, undefined);
  strictEqual(defaults.contextEndpoint, true);
  const set = loadConfig({
    ...base,
    INCONTEXT_ADMIN_TOKEN: "t0ken",
    INCONTEXT_CONTEXT_ENDPOINT: "off",
  });
  strictEqual(set.adminToken, "t0ken");
  strictEqual(set.contextEndpoint, false);
  throws(
    () => loadConfig({ ...base, INCONTEXT_CONTEXT_ENDPOINT: "maybe" }),
    /INCONTEXT_CONTEXT_ENDPOINT must be on or off/,
  );
});

Deno.test("incontext serve passes INCONTEXT_ADMIN_TOKEN and INCONTEXT_CONTEXT_ENDPOINT to the proxy", async () => {
  await using server = await spawnProxy("http://127.0.0.1:9", {
    INCONTEXT_TOKENIZER_URL: "http://127.0.0.1:9/tokenize",
    INCONTEXT_ADMIN_TOKEN: "s3cret-admin",
    INCONTEXT_CONTEXT_ENDPOINT: "off",
  });
  const get = async (path: string, token?: string) => {
    const response = await fetch(`${server.url}${path}`, {
      headers: token === undefined ? {} : { authorization: `Bearer ${token}` },
    });
    await response.body?.cancel();
    return response.status;
  };
  strictEqual(await get("/incontext/metrics"), 401);
  strictEqual(await get("/incontext/metrics", "s3cret-admin"), 200);
  strictEqual(await get("/incontext/context", "s3cret-admin"), 404);
  ok(!(server.stdout.text + server.stderr.text).includes("s3cret"));
});
