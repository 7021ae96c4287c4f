import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import type { LogRecord } from "@logtape/logtape";
import { captureLogs } from "../_kit/log_capture.ts";
import { postJson, proxyFixture } from "../_kit/proxy_fixture.ts";

const CANARY = "CANARY-CONTENT-5e1d";
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

function accessRecords(records: readonly LogRecord[]): LogRecord[] {
  return records.filter((r) => r.category.join(".") === "incontext.access");
}

Deno.test("the proxy writes one access line per budgeted request, with the client's request id, and echoes it", async () => {
  await using logs = await captureLogs();
  await using proxy = await proxyFixture();
  const response = await postJson(
    `${proxy.baseUrl}/chat/completions?key=${CANARY}`,
    {
      model: "m",
      max_tokens: 100,
      messages: [{ role: "user", content: `Say ${CANARY}.` }],
    },
    {
      headers: { "content-type": "application/json", "x-request-id": "req-42" },
    },
  );
  await response.body?.cancel();
  strictEqual(response.headers.get("x-request-id"), "req-42");
  const [record, ...others] = accessRecords(logs.records);
  strictEqual(others.length, 0);
  strictEqual(record?.level, "info");
  const { countMs, upstreamMs, totalMs, ...rest } = record!
    .properties as Record<
      string,
      unknown
    >;
  deepStrictEqual(rest, {
    method: "POST",
    path: "/v1/chat/completions",
    status: 200,
    action: "set",
    source: "vllm-tokenize",
    promptTokens: rest.promptTokens,
    maxTokens: 100,
    requestId: "req-42",
  });
  ok(typeof rest.promptTokens === "number" && rest.promptTokens > 0);
  for (const ms of [countMs, upstreamMs, totalMs]) {
    ok(typeof ms === "number" && ms >= 0, String(ms));
  }
  ok((totalMs as number) >= (upstreamMs as number));
  for (const line of logs.lines) ok(!line.includes(CANARY), line);
});

Deno.test("the proxy generates a request id when the client sends none, and logs refusals and bad bodies too", async () => {
  await using logs = await captureLogs();
  await using proxy = await proxyFixture({ onExhausted: "reject" });
  const ok1 = await postJson(`${proxy.baseUrl}/chat/completions`, {
    model: "m",
    messages: [{ role: "user", content: "hi" }],
  });
  await ok1.body?.cancel();
  const refused = await postJson(`${proxy.baseUrl}/chat/completions`, {
    model: "m",
    messages: [{ role: "user", content: "lorem ".repeat(60_000) }],
  });
  await refused.body?.cancel();
  const malformed = await postJson(`${proxy.baseUrl}/chat/completions`, "{");
  await malformed.body?.cancel();
  // Not budgeted: no access line.
  (await fetch(`${proxy.baseUrl}/models`)).body?.cancel();
  (await fetch(`${proxy.url}/incontext/livez`)).body?.cancel();
  const records = accessRecords(logs.records);
  deepStrictEqual(
    records.map((r) => [r.properties.status, r.properties.action]),
    [[200, "set"], [400, "rejected"], [400, "malformed"]],
  );
  const ids = [ok1, refused, malformed].map((r) =>
    r.headers.get("x-request-id")
  );
  deepStrictEqual(records.map((r) => r.properties.requestId), ids);
  for (const id of ids) ok(UUID.test(id ?? ""), String(id));
  strictEqual(new Set(ids).size, 3);
});
