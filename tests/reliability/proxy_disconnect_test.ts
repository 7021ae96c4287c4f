/**
 * A client that goes away while its prompt is counted is not a tokenizer
 * failure: the count is abandoned with a debug line, the metrics give it
 * its own outcome, and no fallback count or warning is recorded.
 */
import { ok, strictEqual } from "node:assert/strict";
import type { CountOptions, JsonObject } from "../../mod.ts";
import { FakeBackend } from "../../src/testing/mod.ts";
import { captureLogs } from "../_kit/log_capture.ts";
import { serveProxy } from "./_proxy_serve.ts";
import { rawResponse, serveRaw } from "./_raw_wire.ts";

/** Counts only when aborted: it rejects then, as a tokenizer call would. */
class HeldBackend extends FakeBackend {
  readonly started = Promise.withResolvers<void>();
  readonly aborted = Promise.withResolvers<void>();

  override count(_request: JsonObject, options: CountOptions): Promise<number> {
    this.started.resolve();
    return new Promise((_resolve, reject) => {
      options.signal?.addEventListener("abort", () => {
        this.aborted.resolve();
        reject(options.signal?.reason);
      }, { once: true });
    });
  }
}

Deno.test("a client gone during the count is a disconnect, not a tokenizer failure", async () => {
  await using logs = await captureLogs();
  await using upstream = serveRaw(() => rawResponse("{}", "application/json"));
  const backend = new HeldBackend();
  await using proxy = serveProxy(upstream.url, { backend });
  const body = JSON.stringify({
    model: "m",
    messages: [{ role: "user", content: "hi" }],
  });
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: proxy.port });
  await conn.write(
    new TextEncoder().encode(
      `POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body}`,
    ),
  );
  await backend.started.promise;
  conn.close();
  await backend.aborted.promise;
  const gone = 'incontext_client_disconnects_total{phase="count"} 1';
  let text = "";
  // The handler finishes after the abort: poll the metrics until it has.
  for (let i = 0; i < 1000 && !text.includes(gone); i++) {
    text = await (await fetch(`${proxy.url}/incontext/metrics`)).text();
    if (!text.includes(gone)) await new Promise((r) => setTimeout(r, 5));
  }
  ok(text.includes(gone), text);
  ok(!text.includes('kind="fallback"'), "counted as a fallback");
  ok(text.includes('outcome="aborted"'));
  ok(!text.includes('outcome="error"'));
  strictEqual(upstream.requests.length, 0);
  const failures = logs.lines.filter((line) =>
    line.includes("exact count failed") || /\b(warning|error)\b/.test(line)
  );
  strictEqual(failures.join("\n"), "");
  ok(logs.lines.some((line) => line.includes("debug count abandoned")));
});
