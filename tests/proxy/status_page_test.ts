import { ok, strictEqual } from "node:assert/strict";
import { createProxyHandler } from "../../src/proxy/mod.ts";
import { FakeBackend } from "../../src/testing/mod.ts";

function proxy(options: { onExhausted?: "clamp" | "reject" } = {}) {
  return createProxyHandler({
    upstream: "http://user-upstream.test:8000/base",
    window: 55705,
    contextLength: 65536,
    backend: new FakeBackend({ count: 10 }),
    fetch: () => Promise.resolve(Response.json({})),
    ...options,
  });
}

Deno.test("GET /incontext/ serves one self-contained page with the configuration in words", async () => {
  const response = await proxy()(new Request("http://proxy.test/incontext/"));
  strictEqual(response.status, 200);
  strictEqual(
    response.headers.get("content-type"),
    "text/html; charset=utf-8",
  );
  const csp = response.headers.get("content-security-policy") ?? "";
  ok(csp.startsWith("default-src 'none'"), csp);
  const html = await response.text();
  ok(html.startsWith("<!doctype html>"));
  // Nothing loaded from elsewhere: no src or href attribute at all.
  ok(!/\s(?:src|href)=/i.test(html), "no external resource");
  ok(html.includes("W = <b>55,705</b>"), "W in words");
  ok(html.includes("<b>65,536</b> tokens"), "context length in words");
  ok(html.includes("<b>http://user-upstream.test:8000</b>"), "upstream");
  ok(
    html.includes("the cap min(its own cap, R)") &&
      html.includes("when C no longer holds that cap after the prompt"),
    "the clamp policy, as the bridge clamps",
  );
  ok(!html.includes("the context length less the prompt"));
  ok(!html.includes("<!--CONFIG-->"));
  ok(html.includes('fetch("context"'), "reads the decisions");
});

Deno.test("GET /incontext/ words the reject policy as a refusal", async () => {
  const html = await (await proxy({ onExhausted: "reject" })(
    new Request("http://proxy.test/incontext/"),
  )).text();
  ok(html.includes("answers 400 context_length_exceeded"));
});
