/**
 * Client-chosen model names reach logs and `/incontext/context` cut short
 * and with their control characters escaped: a newline in a model name
 * never splits or forges a log record.
 */
import { ok, strictEqual } from "node:assert/strict";
import { MODEL_LABEL_CHARS, modelLabel } from "../../src/core/request.ts";
import { FakeBackend } from "../../src/testing/mod.ts";
import { createProxyHandler } from "../../src/proxy/mod.ts";
import { captureLogs } from "../_kit/log_capture.ts";

const FORGED = "m\n2026-01-01 ERROR forged record\r\u2028\u0000";

Deno.test("modelLabel() cuts and escapes a client's model name", async (t) => {
  await t.step("control characters and line separators are escaped", () => {
    strictEqual(
      modelLabel({ model: FORGED }),
      "m\\u000a2026-01-01 ERROR forged record\\u000d\\u2028\\u0000",
    );
  });
  await t.step("a long name is cut, marked, and never splits a pair", () => {
    const label = modelLabel({ model: "😀".repeat(500) });
    strictEqual(Array.from(label).length, MODEL_LABEL_CHARS + 1);
    ok(label.endsWith("😀…"));
    strictEqual(
      modelLabel({ model: "a".repeat(MODEL_LABEL_CHARS) }).length,
      100,
    );
  });
  await t.step("not a string: unknown", () => {
    strictEqual(modelLabel({ model: 7 }), "unknown");
  });
});

Deno.test("createProxyHandler() keeps a forged model name out of log records and pages", async () => {
  await using logs = await captureLogs();
  const proxy = createProxyHandler({
    upstream: "http://upstream.test",
    window: 55705,
    contextLength: 65536,
    // A failing count logs the model name: the case to check.
    backend: new FakeBackend({ error: new Error("down") }),
    fetch: () => Promise.resolve(Response.json({})),
  });
  const model = `${FORGED}${"x".repeat(5000)}`;
  const response = await proxy(
    new Request("http://proxy.test/v1/chat/completions", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model, messages: [] }),
    }),
  );
  await response.body?.cancel();
  const logged = logs.lines.filter((line) => line.includes("forged record"));
  ok(logged.length > 0, "the model name was never logged");
  for (const line of logged) {
    for (const char of ["\n", "\r", "\u2028", "\u0000"]) {
      ok(!line.includes(char), `a record split: ${line}`);
    }
    ok(!line.includes("x".repeat(MODEL_LABEL_CHARS)), "not cut");
  }
  // From loopback: the page shows the (escaped) model names.
  const page = await (await proxy(
    new Request("http://proxy.test/incontext/context"),
    { remoteAddr: { hostname: "127.0.0.1" } },
  )).json();
  const shown: string = page.decisions.at(-1).model;
  ok(shown.startsWith("m\\u000a2026"));
  ok(shown.length <= MODEL_LABEL_CHARS * 2);
});
