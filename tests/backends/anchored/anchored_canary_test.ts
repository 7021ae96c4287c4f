// Covers: src/backends/anchored/anchored_backend.ts
/**
 * The anchored backend's canary: it holds no credential of its own, but an
 * exact counter it wraps may, and prompts pass through it. A secret and the
 * prompt text must never reach a log line or an error, and the counter's key
 * must go only to the counter's endpoint.
 */
import { ok, rejects, strictEqual } from "node:assert/strict";
import {
  AnchoredBackend,
  AnchorStore,
  recordResponseUsage,
} from "../../../src/backends/anchored/mod.ts";
import type { JsonObject } from "../../../src/core/backend.ts";
import { CountError } from "../../../src/core/errors.ts";
import { createFakeUpstreamHandler } from "../../../src/testing/fake_upstream.ts";
import { createProxyHandler } from "../../../src/proxy/mod.ts";
import { VllmBackend } from "../../../src/backends/vllm/mod.ts";
import { captureLogs } from "../../_kit/log_capture.ts";
import { errorTexts } from "../../_kit/backend_kit.ts";

const C = 65536;
const SECRET = `sk-canary-${crypto.randomUUID()}`;
const PROMPT = `prompt-canary-${crypto.randomUUID()}`;

/** A count server that fails every count with a body echoing the secret and the prompt. */
function echoingFailure(
  seen: Request[],
): (request: Request) => Promise<Response> {
  return async (request) => {
    seen.push(request.clone());
    const text = await request.text();
    return Response.json({
      error: {
        message: `boom ${SECRET} ${request.url} ${text}`,
        type: "InternalServerError",
        param: null,
        code: 500,
      },
    }, { status: 500 });
  };
}

/** Every message and stack along an error's cause chain. */
function assertClean(texts: readonly string[]): void {
  for (const text of texts) {
    ok(!text.includes(SECRET), `a secret leaked: ${text.slice(0, 200)}`);
    ok(!text.includes(PROMPT), `the prompt leaked: ${text.slice(0, 200)}`);
    ok(!text.includes("127.0.0.1"), `a URL leaked: ${text.slice(0, 200)}`);
  }
}

const REQUEST: JsonObject = {
  model: "m",
  messages: [{ role: "user", content: `Remember ${PROMPT}` }],
};

Deno.test("AnchoredBackend keeps secrets and prompts out of logs and errors", async (t) => {
  await using logs = await captureLogs();
  const seen: Request[] = [];
  await using failing = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    echoingFailure(seen),
  );
  // A port nothing listens on: bound, then closed.
  const closed = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const unreachable = `http://127.0.0.1:${closed.addr.port}/tokenize`;
  closed.close();
  const anchors = new AnchorStore();
  const grown: JsonObject = {
    ...REQUEST,
    messages: [
      ...(REQUEST.messages as unknown[]),
      { role: "assistant", content: `Noted ${PROMPT}` },
      { role: "user", content: `And ${PROMPT} again` },
    ],
  };
  ok(recordResponseUsage(anchors, REQUEST, {
    usage: { prompt_tokens: 30, completion_tokens: 5 },
  }));
  const counters = {
    "a 5xx echoing the secret and the prompt": new VllmBackend({
      url: `http://127.0.0.1:${failing.addr.port}/tokenize?key=${SECRET}`,
      apiKey: SECRET,
      cache: null,
    }),
    "an unreachable host": new VllmBackend({
      url: `${unreachable}?key=${SECRET}`,
      apiKey: SECRET,
      cache: null,
    }),
  };
  const errors: unknown[] = [];
  const leakyEstimate = (request: JsonObject) => {
    throw new Error(`cannot estimate ${JSON.stringify(request)} ${SECRET}`);
  };

  for (const [name, count] of Object.entries(counters)) {
    await t.step(`${name}: the part is estimated, nothing leaks`, async () => {
      for (const request of [REQUEST, grown]) {
        const backend = new AnchoredBackend({ anchors, count });
        const counted = await backend.count(request, { contextLength: C });
        ok(counted.tokens > 0);
      }
    });
    await t.step(
      `${name}, then a failing estimate: a clean CountError`,
      async () => {
        for (const request of [REQUEST, grown]) {
          const backend = new AnchoredBackend({
            anchors: new AnchorStore(),
            count,
            estimate: leakyEstimate,
          });
          await rejects(
            backend.count(request, { contextLength: C }),
            (error) => {
              errors.push(error);
              return error instanceof CountError;
            },
          );
        }
      },
    );
  }

  await t.step("the count server did see the secret and the prompt", () => {
    ok(seen.length > 0);
    ok(
      seen.every((r) => r.headers.get("authorization") === `Bearer ${SECRET}`),
    );
  });

  await t.step(
    "no error and no log line holds the secret, the prompt or a URL",
    () => {
      strictEqual(errors.length, 4);
      assertClean(errors.flatMap(errorTexts));
      ok(logs.lines.some((line) => line.includes(" debug ")));
      ok(logs.lines.some((line) => line.includes(" warning ")));
      assertClean(logs.lines);
    },
  );
});

Deno.test("the proxy with an AnchoredBackend sends the counter's key only to the counter", async () => {
  await using logs = await captureLogs();
  const tokenizerSeen: Request[] = [];
  await using tokenizer = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    echoingFailure(tokenizerSeen),
  );
  const upstream = createFakeUpstreamHandler({ maxModelLen: C });
  const anchors = new AnchorStore();
  const proxy = createProxyHandler({
    upstream: "http://upstream.test",
    window: 55705,
    contextLength: C,
    backend: new AnchoredBackend({
      anchors,
      count: new VllmBackend({
        url: `http://127.0.0.1:${tokenizer.addr.port}/tokenize`,
        apiKey: SECRET,
        cache: null,
      }),
    }),
    anchors,
    fetch: upstream.fetch,
  });
  const send = async (body: JsonObject) => {
    const response = await proxy(
      new Request("http://proxy.test/v1/chat/completions", {
        method: "POST",
        headers: {
          "content-type": "application/json",
          authorization: "Bearer client-key",
        },
        body: JSON.stringify(body),
      }),
    );
    return await response.json();
  };
  const first = await send(REQUEST);
  await send({
    ...REQUEST,
    messages: [
      ...(REQUEST.messages as unknown[]),
      first.choices[0].message,
      { role: "user", content: `More ${PROMPT}` },
    ],
  });
  strictEqual(anchors.size, 2);
  strictEqual(tokenizerSeen.length, 2);
  ok(
    tokenizerSeen.every((r) =>
      r.headers.get("authorization") === `Bearer ${SECRET}`
    ),
  );
  ok(upstream.requests.length === 2);
  for (const request of upstream.requests) {
    strictEqual(request.headers["authorization"], "Bearer client-key");
    ok(!request.text.includes(SECRET));
  }
  ok(logs.lines.length > 0);
  assertClean(logs.lines);
});
