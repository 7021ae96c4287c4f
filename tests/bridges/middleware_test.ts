import { ok, strictEqual } from "node:assert/strict";
import { Application } from "@oakserver/oak";
import { Hono } from "hono";
import OpenAI from "openai";
import { budgetMiddleware } from "../../src/bridges/middleware.ts";
import { FakeBackend } from "../../src/testing/mod.ts";
import { serveUpstream } from "../_kit/upstream.ts";

const W = 55705;
const C = 65536;

/** A real proxy on port 0: the middleware in front of a forwarding handler. */
function serveProxy(
  upstreamBase: string,
  middleware: ReturnType<typeof budgetMiddleware>,
) {
  const forward = (request: Request) => {
    const url = new URL(request.url);
    return fetch(
      new Request(
        `${upstreamBase.replace(/\/v1$/, "")}${url.pathname}${url.search}`,
        request,
      ),
    );
  };
  const server = Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen() {} },
    (r) => middleware(r, forward),
  );
  return {
    baseUrl: `http://127.0.0.1:${server.addr.port}/v1`,
    [Symbol.asyncDispose]: () => server.shutdown(),
  };
}

Deno.test("budgetMiddleware() budgets requests between a real client and a real upstream", async (t) => {
  await using upstream = serveUpstream();
  const middleware = budgetMiddleware({
    window: W,
    contextLength: C,
    backend: new FakeBackend({ count: 1705 }),
  });
  await using proxy = serveProxy(upstream.baseUrl, middleware);

  await t.step(
    "the openai SDK through the proxy, with decision headers",
    async () => {
      const client = new OpenAI({
        baseURL: proxy.baseUrl,
        apiKey: "sk-up",
        maxRetries: 0,
      });
      const { data, response } = await client.chat.completions.create({
        model: "m",
        max_tokens: 65536,
        messages: [{ role: "user", content: "Hi" }],
      }).withResponse();
      strictEqual(data.choices[0]?.message.content, "ok");
      strictEqual(
        JSON.parse(upstream.received.at(-1)!.text).max_tokens,
        W - 1705,
      );
      strictEqual(
        upstream.received.at(-1)!.headers.get("authorization"),
        "Bearer sk-up",
      );
      strictEqual(response.headers.get("x-incontext-action"), "set");
      strictEqual(response.headers.get("x-incontext-source"), "fake");
      strictEqual(response.headers.get("x-incontext-prompt-tokens"), "1705");
      strictEqual(
        response.headers.get("x-incontext-max-tokens"),
        String(W - 1705),
      );
    },
  );

  await t.step(
    "malformed JSON gets a 400 with a message and never reaches the upstream",
    async () => {
      const before = upstream.received.length;
      for (const body of ["{not json", "[]", '"text"']) {
        const response = await fetch(`${proxy.baseUrl}/chat/completions`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body,
        });
        strictEqual(response.status, 400);
        const { error } = await response.json();
        ok(
          error.message.startsWith(
            "Cannot budget the request as the body is not",
          ),
        );
      }
      strictEqual(upstream.received.length, before);
    },
  );

  await t.step(
    "other paths and content types are forwarded untouched",
    async () => {
      const models = await fetch(`${proxy.baseUrl}/models`);
      strictEqual(models.status, 404);
      strictEqual(await models.text(), "not found: /v1/models");
      const text = await fetch(`${proxy.baseUrl}/chat/completions`, {
        method: "POST",
        headers: { "content-type": "text/plain" },
        body: "raw bytes",
      });
      await text.body?.cancel();
      strictEqual(upstream.received.at(-1)!.text, "raw bytes");
      strictEqual(text.headers.get("x-incontext-action"), null);
    },
  );
});

Deno.test("budgetMiddleware() answers the reject policy itself", async () => {
  let called = false;
  const middleware = budgetMiddleware({
    window: W,
    contextLength: C,
    backend: new FakeBackend({ count: W }),
    onExhausted: "reject",
  });
  const response = await middleware(
    new Request("http://proxy.test/v1/chat/completions", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: '{"messages":[]}',
    }),
    () => {
      called = true;
      return Promise.resolve(new Response());
    },
  );
  strictEqual(called, false);
  strictEqual(response.status, 400);
  strictEqual(response.headers.get("x-incontext-action"), "compress");
  strictEqual((await response.json()).error.code, "context_length_exceeded");
});

Deno.test("budgetMiddleware() runs inside a Hono app", async () => {
  await using upstream = serveUpstream();
  const middleware = budgetMiddleware({
    window: W,
    contextLength: C,
    backend: new FakeBackend({ count: 5 }),
  });
  const forward = (request: Request) => {
    const url = new URL(request.url);
    return fetch(
      new Request(
        `${upstream.baseUrl.replace(/\/v1$/, "")}${url.pathname}`,
        request,
      ),
    );
  };
  const app = new Hono();
  app.all("*", (c) => middleware(c.req.raw, forward));
  const response = await app.request("/v1/chat/completions", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ messages: [{ role: "user", content: "Hi" }] }),
  });
  strictEqual(response.status, 200);
  strictEqual(response.headers.get("x-incontext-action"), "set");
  await response.body?.cancel();
  strictEqual(JSON.parse(upstream.received.at(-1)!.text).max_tokens, W - 5);
});

Deno.test("budgetMiddleware() runs inside an oak application", async () => {
  await using upstream = serveUpstream();
  const middleware = budgetMiddleware({
    window: W,
    contextLength: C,
    backend: new FakeBackend({ count: 5 }),
  });
  const forward = (request: Request) => {
    const url = new URL(request.url);
    return fetch(
      new Request(
        `${upstream.baseUrl.replace(/\/v1$/, "")}${url.pathname}`,
        request,
      ),
    );
  };
  const app = new Application();
  // oak hands over the native Request; its answer becomes oak's response.
  // (oak's npm build types Request with undici's types: the same objects.)
  app.use(async (ctx) => {
    const answer = await middleware(
      ctx.request.source as unknown as Request,
      forward,
    );
    ctx.response.status = answer.status;
    ctx.response.headers = answer.headers;
    ctx.response.body = answer.body;
  });
  const request = new Request("http://oak.test/v1/chat/completions", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ messages: [{ role: "user", content: "Hi" }] }),
  });
  const response = await app.handle(request as never);
  ok(response);
  strictEqual(response.status, 200);
  strictEqual(response.headers.get("x-incontext-action"), "set");
  strictEqual(response.headers.get("x-incontext-max-tokens"), String(W - 5));
  await response.body?.cancel();
  strictEqual(JSON.parse(upstream.received.at(-1)!.text).max_tokens, W - 5);
});
