// Covers: src/replicas/prefetch_backend.ts, src/replicas/anchors.ts, src/proxy/health.ts
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import { AnchoredBackend } from "../../src/backends/anchored/mod.ts";
import { PrefetchingBackend } from "../../src/replicas/prefetch_backend.ts";
import { SharedAnchorStore } from "../../src/replicas/anchors.ts";
import { SharedStore } from "../../src/replicas/store.ts";
import { FakeBackend } from "../../src/testing/mod.ts";
import { FakeStoreServer } from "../_kit/fake_store.ts";
import { proxyFixture } from "../_kit/proxy_fixture.ts";

function replicaOn(server: FakeStoreServer) {
  const shared = new SharedStore({
    connection: server.connect(),
    timeoutMs: 50,
    ttlSeconds: 60,
  });
  return { shared, anchors: new SharedAnchorStore({ shared }) };
}

const turn1 = [{ role: "user", content: "Summarise the report" }];
const turn2 = [
  ...turn1,
  { role: "assistant", content: "Which report?" },
  { role: "user", content: "The quarterly one" },
];

Deno.test("PrefetchingBackend counts from an anchor another replica recorded", async (t) => {
  const server = new FakeStoreServer();
  const a = replicaOn(server);
  const b = replicaOn(server);
  await using _a = a.shared;
  await using _b = b.shared;
  await new Promise((resolve) => setTimeout(resolve, 0));
  a.anchors.record("m\nnull", turn1, {
    promptTokens: 900,
    completionTokens: 100,
  });
  await new Promise((resolve) => setTimeout(resolve, 0));
  await t.step(
    "the anchored backend reads it when the anchor comes first",
    async () => {
      const backend = new PrefetchingBackend(
        new AnchoredBackend({ anchors: b.anchors }),
        { anchors: b.anchors, anchorsFirst: true },
      );
      const count = await backend.count({ model: "m", messages: turn2 }, {
        contextLength: 8192,
      });
      ok(typeof count === "object" && count.tokens > 1000, String(count));
    },
  );
  await t.step(
    "beside an exact count, the anchor is there once the count returns",
    async () => {
      const c = replicaOn(server);
      await using _c = c.shared;
      await new Promise((resolve) => setTimeout(resolve, 0));
      const backend = new PrefetchingBackend(new FakeBackend({ count: 1042 }), {
        anchors: c.anchors,
        anchorsFirst: false,
      });
      strictEqual(
        await backend.count({ model: "m", messages: turn2 }, {
          contextLength: 8192,
        }),
        1042,
      );
      deepStrictEqual(c.anchors.lookup("m\nnull", turn2), {
        promptTokens: 900,
        completionTokens: 100,
        prefixLength: 1,
      });
    },
  );
  await t.step("other request kinds are not looked up", async () => {
    const calls = server.calls;
    const backend = new PrefetchingBackend(new FakeBackend({ count: 7 }), {
      anchors: b.anchors,
      anchorsFirst: false,
    });
    await backend.count({ prompt: "x" }, {
      contextLength: 8192,
      kind: "completion",
    });
    strictEqual(server.calls, calls);
  });
});

Deno.test("the proxy's readyz and metrics report the shared store without changing the status", async () => {
  const server = new FakeStoreServer();
  const { shared } = replicaOn(server);
  await using _shared = shared;
  await new Promise((resolve) => setTimeout(resolve, 0));
  server.mode = "fail";
  await shared.read("anchor", ["k"]);
  await using proxy = await proxyFixture({
    reporters: [{
      name: "sharedStore",
      status: () => shared.status(),
      metricLines: () => shared.metricLines(),
    }],
  });
  const health = await fetch(`${proxy.url}/incontext/readyz`);
  strictEqual(health.status, 200);
  const body = await health.json();
  strictEqual(body.status, "ready");
  strictEqual(body.sharedStore.state, "down");
  strictEqual(body.sharedStore.error, "Error ECONNREFUSED");
  ok(!JSON.stringify(body).includes("127.0.0.1:6379"));
  const metrics = await (await fetch(`${proxy.url}/incontext/metrics`)).text();
  ok(
    metrics.includes(
      'incontext_shared_store_errors_total{kind="anchor",reason="error"} 1',
    ),
    metrics,
  );
});
