import { deepStrictEqual, strictEqual } from "node:assert/strict";
import { createProxyHandler } from "../../src/proxy/mod.ts";
import { FakeBackend } from "../../src/testing/mod.ts";
import { W } from "../_kit/proxy_fixture.ts";

/** A proxy in front of an upstream that answers every generation. */
function proxyWith(adminToken?: string) {
  return createProxyHandler({
    upstream: "http://upstream.test",
    window: W,
    contextLength: 65536,
    backend: new FakeBackend({ count: 100 }),
    fetch: () => Promise.resolve(Response.json({ choices: [] })),
    ...(adminToken === undefined ? {} : { adminToken }),
  });
}

const chat = (model: string) =>
  new Request("http://proxy.test/v1/chat/completions", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      model,
      messages: [{ role: "user", content: "hi" }],
    }),
  });

const from = (hostname: string) => ({ remoteAddr: { hostname } });

async function models(
  proxy: ReturnType<typeof proxyWith>,
  info: { remoteAddr?: { hostname: string } } | undefined,
  headers: HeadersInit = {},
): Promise<{ modelNames: string; models: (string | null)[] }> {
  const view = await (await proxy(
    new Request("http://proxy.test/incontext/context", { headers }),
    info,
  )).json();
  return {
    modelNames: view.modelNames,
    models: view.decisions.map((d: { model: string | null }) => d.model),
  };
}

Deno.test("/incontext/context shows model names only to loopback clients, or behind the admin token", async (t) => {
  const proxy = proxyWith();
  for (const model of ["acme/secret-a", "acme/secret-b", "acme/secret-a"]) {
    await (await proxy(chat(model), from("10.0.0.5"))).body?.cancel();
  }
  await t.step(
    "a remote client sees numbered labels in their place",
    async () => {
      deepStrictEqual(await models(proxy, from("10.0.0.5")), {
        modelNames: "hidden",
        models: ["model 1", "model 2", "model 1"],
      });
      deepStrictEqual(
        (await models(proxy, from("::ffff:192.168.1.9"))).modelNames,
        "hidden",
      );
    },
  );
  await t.step(
    "a client the server says nothing of counts as remote",
    async () => {
      strictEqual((await models(proxy, undefined)).modelNames, "hidden");
    },
  );
  await t.step("loopback clients see the names", async () => {
    for (
      const hostname of ["127.0.0.1", "127.8.0.1", "::1", "::ffff:127.0.0.1"]
    ) {
      deepStrictEqual(await models(proxy, from(hostname)), {
        modelNames: "shown",
        models: ["acme/secret-a", "acme/secret-b", "acme/secret-a"],
      });
    }
  });
  await t.step(
    "with an admin token, whoever presents it sees them",
    async () => {
      const guarded = proxyWith("tok-123");
      await (await guarded(chat("acme/secret-a"), from("10.0.0.5"))).body
        ?.cancel();
      const refused = await guarded(
        new Request("http://proxy.test/incontext/context"),
        from("10.0.0.5"),
      );
      strictEqual(refused.status, 401);
      await refused.body?.cancel();
      deepStrictEqual(
        await models(guarded, from("10.0.0.5"), {
          authorization: "Bearer tok-123",
        }),
        { modelNames: "shown", models: ["acme/secret-a"] },
      );
    },
  );
});
