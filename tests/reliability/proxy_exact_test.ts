/**
 * The proxy forwards what the client sent, as it sent it: methods, headers
 * and framing seen on the upstream's raw socket. Methods `fetch` cannot
 * send get the proxy's own 501; budgeting follows the endpoint and the
 * upstream's reading of the body, not the content type alone; an upstream
 * body cut short is told apart from an unreachable upstream.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import { serveProxy } from "./_proxy_serve.ts";
import {
  rawExchange,
  type RawRequest,
  rawResponse,
  serveRaw,
} from "./_raw_wire.ts";

const CHAT = JSON.stringify({
  model: "m",
  max_tokens: 65536,
  messages: [{ role: "user", content: "hi" }],
});

function header(request: RawRequest, name: string): string | undefined {
  return request.headers.find(([n]) => n === name)?.[1];
}

/** A raw request to the proxy on `port`. */
function raw(
  port: number,
  head: string,
  body = "",
): Promise<{ status: number; text: string }> {
  return rawExchange(
    port,
    `${head}\r\nhost: 127.0.0.1:${port}\r\nconnection: close\r\n\r\n${body}`,
  );
}

async function metrics(url: string): Promise<string> {
  return await (await fetch(`${url}/incontext/metrics`)).text();
}

Deno.test("the proxy forwards methods and framing as the client sent them", async (t) => {
  await using upstream = serveRaw(() => rawResponse("ok"));
  await using proxy = serveProxy(upstream.url);

  // RFC 9110 section 8.6: a request of a method that defines a meaning for
  // content says its length; an empty one says 0, the same message as none.
  const lengths: [method: string, length: string | undefined][] = [
    ["OPTIONS", undefined],
    ["DELETE", undefined],
    ["GET", undefined],
    ["PURGE", undefined],
    ["PROPFIND", "0"],
    ["PUT", "0"],
  ];
  for (const [method, length] of lengths) {
    await t.step(
      `${method} without a body gets no body, and no framing but a length of 0 at most`,
      async () => {
        upstream.requests.length = 0;
        const answer = await raw(proxy.port, `${method} /v1/things HTTP/1.1`);
        strictEqual(answer.status, 200);
        const [seen] = upstream.requests;
        strictEqual(seen?.line, `${method} /v1/things HTTP/1.1`);
        strictEqual(header(seen, "transfer-encoding"), undefined);
        strictEqual(header(seen, "content-length"), length);
        strictEqual(seen.body, "");
      },
    );
  }

  await t.step(
    "a body with a length keeps that length, not chunks",
    async () => {
      upstream.requests.length = 0;
      const answer = await raw(
        proxy.port,
        "PUT /v1/files/a HTTP/1.1\r\ncontent-type: text/plain\r\ncontent-length: 5",
        "hello",
      );
      strictEqual(answer.status, 200);
      const [seen] = upstream.requests;
      strictEqual(header(seen!, "content-length"), "5");
      strictEqual(header(seen!, "transfer-encoding"), undefined);
      strictEqual(seen!.body, "hello");
    },
  );

  await t.step("an empty body with a length stays an empty body", async () => {
    upstream.requests.length = 0;
    await raw(proxy.port, "POST /v1/files HTTP/1.1\r\ncontent-length: 0");
    const [seen] = upstream.requests;
    strictEqual(header(seen!, "content-length"), "0");
    strictEqual(header(seen!, "transfer-encoding"), undefined);
  });

  await t.step("the client's headers pass with their values", async () => {
    upstream.requests.length = 0;
    await raw(
      proxy.port,
      "GET /v1/models HTTP/1.1\r\naccept: application/json\r\naccept-language: de\r\nuser-agent: probe/1\r\nx-custom: a b",
    );
    const [seen] = upstream.requests;
    strictEqual(header(seen!, "accept"), "application/json");
    strictEqual(header(seen!, "accept-language"), "de");
    strictEqual(header(seen!, "user-agent"), "probe/1");
    strictEqual(header(seen!, "x-custom"), "a b");
  });

  await t.step("headers the client did not send are not added", async () => {
    upstream.requests.length = 0;
    await raw(proxy.port, "GET /v1/models HTTP/1.1\r\nx-custom: 1");
    const [seen] = upstream.requests;
    const names = seen!.headers.map(([name]) => name).sort();
    // What the upstream connection itself needs, and the client's one header.
    deepStrictEqual(names, ["connection", "host", "x-custom"]);
    strictEqual(header(seen!, "connection"), "keep-alive");
  });

  await t.step(
    "a forwarded request keeps the client's accept-encoding, or its absence",
    async () => {
      upstream.requests.length = 0;
      await raw(proxy.port, "GET /v1/models HTTP/1.1\r\naccept-encoding: br");
      await raw(proxy.port, "GET /v1/models HTTP/1.1");
      const [withOne, without] = upstream.requests;
      strictEqual(header(withOne!, "accept-encoding"), "br");
      strictEqual(header(without!, "accept-encoding"), undefined);
    },
  );

  await t.step(
    "a budgeted request asks for an answer the proxy can read",
    async () => {
      upstream.requests.length = 0;
      await raw(
        proxy.port,
        `POST /v1/chat/completions HTTP/1.1\r\ncontent-type: application/json\r\naccept-encoding: gzip\r\ncontent-length: ${CHAT.length}`,
        CHAT,
      );
      const [seen] = upstream.requests;
      strictEqual(header(seen!, "accept-encoding"), "identity");
      strictEqual(header(seen!, "accept"), undefined);
      strictEqual(header(seen!, "user-agent"), undefined);
    },
  );
});

Deno.test("the proxy answers 501 itself for a method fetch cannot send as it came", async (t) => {
  await using upstream = serveRaw(() => rawResponse("ok"));
  await using proxy = serveProxy(upstream.url);
  const cases = [
    "TRACE /v1/models HTTP/1.1",
    "TRACK /v1/models HTTP/1.1",
    "get /v1/models HTTP/1.1",
    "post /v1/chat/completions HTTP/1.1\r\ncontent-type: application/json\r\ncontent-length: 2",
    "GET /v1/models HTTP/1.1\r\ncontent-length: 5",
  ];
  for (const head of cases) {
    await t.step(head.split("\r\n")[0]!, async () => {
      const body = head.includes("content-length: 5")
        ? "hello"
        : head.includes("content-length: 2")
        ? "{}"
        : "";
      const answer = await raw(proxy.port, head, body);
      strictEqual(answer.status, 501, answer.text);
      ok(answer.text.includes('"method_not_supported"'));
    });
  }
  strictEqual(upstream.requests.length, 0);
  const text = await metrics(proxy.url);
  ok(!text.includes('status="0"'), "counted as an unreachable upstream");
  ok(!text.includes("upstream_unreachable"));
});

Deno.test("the proxy budgets by endpoint, as the upstream reads the body", async (t) => {
  await using upstream = serveRaw(() => rawResponse("{}", "application/json"));
  await using proxy = serveProxy(upstream.url);
  const sent = () => upstream.requests.at(-1)!.body;

  await t.step("no content type, a JSON body: budgeted", async () => {
    const answer = await raw(
      proxy.port,
      `POST /v1/chat/completions HTTP/1.1\r\ncontent-length: ${CHAT.length}`,
      CHAT,
    );
    strictEqual(answer.status, 200);
    ok(answer.text.includes("x-incontext-action: set"));
    strictEqual(JSON.parse(sent()).max_tokens, 55705 - 100);
  });

  await t.step("a +json content type: budgeted", async () => {
    const answer = await raw(
      proxy.port,
      `POST /v1/chat/completions HTTP/1.1\r\ncontent-type: application/vnd.api+json; charset=utf-8\r\ncontent-length: ${CHAT.length}`,
      CHAT,
    );
    ok(answer.text.includes("x-incontext-action: set"));
    strictEqual(JSON.parse(sent()).max_tokens, 55705 - 100);
  });

  await t.step(
    "text/plain (the upstream does not read it as JSON): as it came",
    async () => {
      const answer = await raw(
        proxy.port,
        `POST /v1/chat/completions HTTP/1.1\r\ncontent-type: text/plain\r\ncontent-length: ${CHAT.length}`,
        CHAT,
      );
      ok(!answer.text.includes("x-incontext-action"));
      strictEqual(sent(), CHAT);
    },
  );

  await t.step(
    "no content type, a body that is not JSON: as it came",
    async () => {
      const answer = await raw(
        proxy.port,
        "POST /v1/chat/completions HTTP/1.1\r\ncontent-length: 9",
        "not json!",
      );
      strictEqual(answer.status, 200);
      strictEqual(sent(), "not json!");
      strictEqual(header(upstream.requests.at(-1)!, "content-length"), "9");
    },
  );
});

Deno.test("an upstream body shorter than its length is truncated, not unreachable", async (t) => {
  const cut = (type: string) =>
    `HTTP/1.1 200 OK\r\ncontent-type: ${type}\r\ncontent-length: 100\r\nconnection: close\r\n\r\n{"id":"x",`;
  await t.step("a JSON answer read whole: 502 upstream_truncated", async () => {
    await using upstream = serveRaw(() => cut("application/json"));
    await using proxy = serveProxy(upstream.url);
    const response = await fetch(`${proxy.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: CHAT,
    });
    strictEqual(response.status, 502);
    strictEqual((await response.json()).error.code, "upstream_truncated");
    const text = await metrics(proxy.url);
    ok(text.includes('incontext_upstream_errors_total{error="truncated"} 1'));
    ok(!text.includes('status="0"'));
    ok(!text.includes('error="unreachable"'));
  });
  await t.step("a streamed answer: the client's stream errors", async () => {
    await using upstream = serveRaw(() => cut("text/event-stream"));
    await using proxy = serveProxy(upstream.url);
    const response = await fetch(`${proxy.url}/v1/models`);
    strictEqual(response.status, 200);
    let failed = false;
    try {
      await response.text();
    } catch {
      failed = true;
    }
    ok(failed, "the cut stream ended as if complete");
    const text = await metrics(proxy.url);
    ok(text.includes('incontext_upstream_errors_total{error="truncated"} 1'));
    deepStrictEqual(
      text.match(/error="unreachable"/g),
      null,
    );
  });
});
