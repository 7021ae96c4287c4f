/**
 * `Expect: 100-continue` through `incontext serve` works as it does
 * direct: curl adds it by itself to every body over 1 MiB; the proxy's own
 * server answers the 100 when it reads the body (or its final status when
 * it refuses first), and the upstream never sees the field.
 */
import { ok, strictEqual } from "node:assert/strict";
import {
  chatBodyOf,
  curl,
  metric,
  metrics,
  startServe,
  stillServes,
  tempFile,
} from "./_process.ts";

Deno.test("incontext serve answers Expect: 100-continue itself and never forwards it", async (t) => {
  // A limit above curl's 1 MiB threshold: a 1.2 MB body is within it.
  await using served = await startServe({
    INCONTEXT_MAX_REQUEST_BYTES: String(4 * 1024 * 1024),
  });
  const { proxy, upstream } = served;
  await using body = await tempFile(chatBodyOf(1_200_000));

  await t.step(
    "a budgeted route: 100, then the upstream's answer",
    async () => {
      const before = metric(
        await metrics(proxy),
        'incontext_upstream_errors_total{error="unreachable"}',
      );
      const answer = await curl(`${proxy.url}/v1/chat/completions`, {
        body: body.path,
      });
      ok(answer.verbose.includes("> Expect: 100-continue"), answer.verbose);
      ok(answer.verbose.includes("< HTTP/1.1 100 Continue"), answer.verbose);
      // The fake vLLM refuses 300,000 prompt tokens itself, or the proxy says
      // compress: either way an answer about the prompt, never a 502.
      ok(answer.status === 200 || answer.status === 400, answer.body);
      ok(!answer.body.includes("upstream_unreachable"), answer.body);
      strictEqual(
        metric(
          await metrics(proxy),
          'incontext_upstream_errors_total{error="unreachable"}',
        ),
        before,
      );
      await stillServes(proxy);
    },
  );

  await t.step(
    "a budgeted route with room: the body reaches vLLM whole, without expect",
    async () => {
      await using fits = await tempFile(
        JSON.stringify({
          model: "m",
          messages: [{ role: "user", content: "y" }],
          max_tokens: 10,
          // Not prompt text: padding vLLM ignores.
          user: "z".repeat(1_200_000),
        }),
      );
      const seen = upstream.requests.length;
      const answer = await curl(`${proxy.url}/v1/chat/completions`, {
        body: fits.path,
      });
      ok(answer.verbose.includes("< HTTP/1.1 100 Continue"), answer.verbose);
      strictEqual(answer.status, 200, answer.body);
      const sent = upstream.requests.slice(seen).find((r) =>
        r.path === "/v1/chat/completions"
      );
      ok(sent !== undefined);
      strictEqual(sent.headers.expect, undefined);
      strictEqual((sent.body as { user: string }).user.length, 1_200_000);
      await stillServes(proxy);
    },
  );

  await t.step(
    "a pass-through route: 100, then the upstream's own answer",
    async () => {
      const seen = upstream.requests.length;
      const answer = await curl(`${proxy.url}/v1/embeddings`, {
        body: body.path,
      });
      ok(answer.verbose.includes("< HTTP/1.1 100 Continue"), answer.verbose);
      ok(!answer.body.includes("upstream_unreachable"), answer.body);
      const sent = upstream.requests.slice(seen).find((r) =>
        r.path === "/v1/embeddings"
      );
      ok(sent !== undefined, "the upstream got the request");
      strictEqual(sent.headers.expect, undefined);
      strictEqual(sent.text.length, (await Deno.stat(body.path)).size);
      await stillServes(proxy);
    },
  );

  await t.step(
    "a request the proxy refuses first gets its final status and no 100",
    async () => {
      const answer = await curl(`${proxy.url}/v1/chat/completions`, {
        body: body.path,
        extra: ["-X", "TRACE"],
      });
      strictEqual(answer.status, 501, answer.body);
      ok(!answer.verbose.includes("< HTTP/1.1 100"), answer.verbose);
      await stillServes(proxy);
    },
  );
});
