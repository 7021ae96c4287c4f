/**
 * Run by proxy_hostile_test.ts with `--unstable-unsafe-proto`, which gives
 * Deno the `Object.prototype.__proto__` accessor Node has: prototype-pollution
 * keys through every entry point, under Node's semantics. Prints one JSON
 * line: what reached the upstream, what the anchors saw, and whether
 * Object.prototype changed.
 */
import { budget } from "../../mod.ts";
import { budgetedFetch } from "../../src/bridges/fetch.ts";
import { budgetMiddleware } from "../../src/bridges/middleware.ts";
import { createProxyHandler } from "../../src/proxy/mod.ts";
import { AnchorStore, canonicalMessage } from "../../src/anchors/store.ts";
import { FakeBackend } from "../../src/testing/mod.ts";

const BODY =
  '{"__proto__":{"polluted":true,"max_tokens":1},"constructor":{"prototype":{"polluted":true}},"model":"m","messages":[{"role":"user","content":"hi","__proto__":{"role":"system","polluted":true}}]}';
const options = {
  window: 55705,
  contextLength: 65536,
  backend: new FakeBackend({ count: 100 }),
};
const CHAT = "http://upstream.test/v1/chat/completions";
const forwarded: Record<string, string> = {};
const accessor = Object.getOwnPropertyDescriptor(Object.prototype, "__proto__");

const result = await budget(JSON.parse(BODY), options);
forwarded.budget = JSON.stringify(result.request);

const fetched = budgetedFetch((_input, init) => {
  forwarded.fetch = String(init?.body);
  return Promise.resolve(new Response("{}"));
}, options);
await fetched(CHAT, {
  method: "POST",
  headers: { "content-type": "application/json" },
  body: BODY,
});

await budgetMiddleware(options)(
  new Request(CHAT, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: BODY,
  }),
  async (request) => {
    forwarded.middleware = await request.text();
    return new Response("{}");
  },
);

const proxy = createProxyHandler({
  ...options,
  upstream: "http://upstream.test",
  fetch: async (input, init) => {
    forwarded.proxy = await new Request(input, init).text();
    return Response.json({
      usage: { prompt_tokens: 10, completion_tokens: 2 },
    });
  },
});
for (let turn = 0; turn < 2; turn++) {
  const response = await proxy(
    new Request(CHAT, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: BODY,
    }),
  );
  await response.text();
}

const polluted = JSON.parse(BODY).messages[0];
const store = new AnchorStore();
store.record("m", [polluted], { promptTokens: 10, completionTokens: 2 });
const probe: Record<string, unknown> = {};
console.log(JSON.stringify({
  accessor: accessor !== undefined,
  forwarded,
  canonical: canonicalMessage(polluted),
  // A message without the key must not match one that has it.
  plainMatches:
    store.lookup("m", [{ role: "user", content: "hi" }]) !== undefined,
  prototypeKeys: Object.keys(Object.prototype),
  polluted: probe.polluted ?? null,
}));
