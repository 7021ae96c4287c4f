/**
 * `incontext serve` sends a long body upstream while it is counted: driven
 * by curl as a user runs it, the upstream gets the same JSON object the
 * decision makes (its cap last), and with `INCONTEXT_EARLY_SEND=off` the
 * body as it came but for its cap.
 *
 * Covers: src/proxy/early_send.ts, src/cli/serve/command.ts
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import {
  CHAT,
  curl,
  metric,
  metrics,
  startServe,
  stillServes,
  tempFile,
} from "./_process.ts";

/** A ~200 KB conversation: long enough to be sent while counted. */
function longBody(cap: unknown): string {
  return JSON.stringify({
    model: "m",
    max_tokens: cap,
    messages: [{ role: "user", content: "many words ".repeat(20_000) }],
  });
}

const EARLY = 'incontext_upstream_early_sends_total{outcome="committed"}';

Deno.test("incontext serve sends a long body while it is counted, and its decision's cap ends it", async (t) => {
  await using served = await startServe();
  const { proxy, upstream } = served;
  const sentLast = () =>
    upstream.requests.filter((r) => r.path === CHAT).at(-1)!;

  await t.step("a cap the proxy writes", async () => {
    const body = longBody(65536);
    await using file = await tempFile(body);
    const answer = await curl(`${proxy.url}${CHAT}`, { body: file.path });
    strictEqual(answer.status, 200);
    const cap = Number(
      /x-incontext-max-tokens: (\d+)/i.exec(answer.verbose)?.[1],
    );
    ok(cap > 0 && cap < 65536, String(cap));
    const sent = sentLast().text;
    deepStrictEqual(JSON.parse(sent), { ...JSON.parse(body), max_tokens: cap });
    ok(/"max_tokens":\d+ +\}$/.test(sent), sent.slice(-120));
    strictEqual(metric(await metrics(proxy), EARLY), 1);
    await stillServes(proxy);
  });

  await t.step(
    "a cap the server refuses: nothing to count, sent byte for byte",
    async () => {
      const body = longBody("many");
      await using file = await tempFile(body);
      const answer = await curl(`${proxy.url}${CHAT}`, { body: file.path });
      ok(/x-incontext-action: unchanged/i.test(answer.verbose));
      strictEqual(sentLast().text, body);
      strictEqual(metric(await metrics(proxy), EARLY), 1);
      await stillServes(proxy);
    },
  );

  await t.step(
    "a cap after the messages, as the Python SDK writes it",
    async () => {
      // Words of its own: a count the cache holds may come before the send.
      const messages = [{
        role: "user",
        content: "other words ".repeat(20_000),
      }];
      const body = `{"messages":${
        JSON.stringify(messages)
      },"model":"m","max_tokens":65536}`;
      await using file = await tempFile(body);
      const answer = await curl(`${proxy.url}${CHAT}`, { body: file.path });
      strictEqual(answer.status, 200);
      const cap = /x-incontext-max-tokens: (\d+)/i.exec(answer.verbose)![1]!;
      strictEqual(
        sentLast().text,
        body.replace(
          '"max_tokens":65536',
          `"max_tokens":${cap.padEnd(5, " ")}`,
        ),
      );
      strictEqual(metric(await metrics(proxy), EARLY), 2);
      await stillServes(proxy);
    },
  );
});

Deno.test("INCONTEXT_EARLY_SEND=off sends a long body once counted, written once whole", async (t) => {
  await using served = await startServe({ INCONTEXT_EARLY_SEND: "off" });
  const { proxy, upstream } = served;
  const sentLast = () =>
    upstream.requests.filter((r) => r.path === CHAT).at(-1)!;

  await t.step("a cap the proxy writes", async () => {
    const body = longBody(65536);
    await using file = await tempFile(body);
    const answer = await curl(`${proxy.url}${CHAT}`, { body: file.path });
    strictEqual(answer.status, 200);
    const cap = Number(
      /x-incontext-max-tokens: (\d+)/i.exec(answer.verbose)?.[1],
    );
    const sent = sentLast().text;
    deepStrictEqual(JSON.parse(sent), { ...JSON.parse(body), max_tokens: cap });
    ok(sent.endsWith(`"max_tokens":${cap}}`), sent.slice(-120));
    strictEqual(metric(await metrics(proxy), EARLY), 0);
    await stillServes(proxy);
  });
});
