import { deepStrictEqual, strictEqual } from "node:assert/strict";
import { proxyFixture, W } from "./_proxy_fixture.ts";

Deno.test("/incontext/healthz tells a tokenizer that answers with another context length from one that is gone", async () => {
  // The fake upstream serves max_model_len 65536; this proxy is told 131072.
  await using proxy = await proxyFixture({
    contextLength: 131072,
    window: W,
  });
  const response = await fetch(`${proxy.url}/incontext/healthz`);
  strictEqual(response.status, 503);
  deepStrictEqual(await response.json(), {
    status: "degraded",
    upstream: "reachable",
    tokenizer: "context_length_mismatch",
  });
});
