/**
 * A cap the server refuses reaches it as the client wrote it: `incontext
 * serve` sends a request whose `max_tokens` (or another alias) is 0, a
 * negative, a fraction, a string that is no integer, an array or an object
 * byte for byte, says `unchanged` and names the field, so that vLLM answers
 * as it would without the proxy. Driven by the real openai SDK, undici and
 * curl.
 */
import { ok, strictEqual } from "node:assert/strict";
import OpenAI from "openai";
import { request as undiciRequest } from "undici";
import { curl, startServe, stillServes, tempFile } from "./_process.ts";

const MESSAGES = [{ role: "user", content: "hi" }];

Deno.test("incontext serve forwards a cap the server refuses as sent", async (t) => {
  await using served = await startServe();
  const { proxy, upstream } = served;
  const sentLast = () =>
    upstream.requests.filter((r) => r.path.startsWith("/v1/")).at(-1)!;

  const invalid: [string, unknown][] = [
    ["max_tokens", 0],
    ["max_tokens", -1],
    ["max_tokens", 1.5],
    ["max_tokens", "many"],
    ["max_tokens", []],
    ["max_tokens", {}],
    ["max_completion_tokens", 0],
  ];
  for (const [field, value] of invalid) {
    await t.step(
      `${field}: ${JSON.stringify(value)} through undici`,
      async () => {
        const body = JSON.stringify({
          model: "m",
          messages: MESSAGES,
          [field]: value,
        });
        const response = await undiciRequest(
          `${proxy.url}/v1/chat/completions`,
          {
            method: "POST",
            headers: { "content-type": "application/json" },
            body,
          },
        );
        await response.body.text();
        strictEqual(response.headers["x-incontext-action"], "unchanged");
        const reason = String(response.headers["x-incontext-reason"]);
        ok(reason.includes(`'${field}' is not a positive integer`), reason);
        strictEqual(sentLast().text, body);
        await stillServes(proxy);
      },
    );
  }

  await t.step("the openai SDK with max_tokens 0", async () => {
    const client = new OpenAI({
      baseURL: `${proxy.url}/v1`,
      apiKey: "sk-test",
      maxRetries: 0,
    });
    const { response } = await client.chat.completions.create({
      model: "m",
      messages: [{ role: "user", content: "hi" }],
      max_tokens: 0,
    }).withResponse().catch((error) => ({ response: error as Response }));
    const sent = sentLast().body as { max_tokens: unknown };
    strictEqual(sent.max_tokens, 0);
    ok(response !== undefined);
    await stillServes(proxy);
  });

  await t.step("curl with a fractional cap in extra_body", async () => {
    const body = JSON.stringify({
      model: "m",
      messages: MESSAGES,
      max_tokens: 50,
      extra_body: { max_completion_tokens: 2.5 },
    });
    await using file = await tempFile(body);
    const answer = await curl(`${proxy.url}/v1/chat/completions`, {
      body: file.path,
      extra: ["-D", "-"],
    });
    ok(/x-incontext-action: unchanged/i.test(answer.body), answer.body);
    ok(answer.body.includes("'extra_body.max_completion_tokens'"), answer.body);
    strictEqual(sentLast().text, body);
    await stillServes(proxy);
  });

  await t.step(
    "positive integer caps still budget: the smallest wins",
    async () => {
      const response = await fetch(`${proxy.url}/v1/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          model: "m",
          messages: MESSAGES,
          max_tokens: 900,
          max_completion_tokens: 500,
        }),
      });
      await response.body?.cancel();
      strictEqual(response.headers.get("x-incontext-action"), "set");
      const sent = sentLast().body as Record<string, unknown>;
      strictEqual(sent.max_completion_tokens, 500);
      strictEqual(sent.max_tokens, undefined);
      await stillServes(proxy);
    },
  );
});
