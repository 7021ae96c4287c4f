/**
 * createExactFetch() against real listeners: what reaches the server is what
 * was given, a redirect is returned rather than followed, an aborted request
 * is never sent again, a cancelled answer closes its connection, and the
 * status line's reason phrase comes back.
 */
import { deepStrictEqual, ok, rejects, strictEqual } from "node:assert/strict";
import {
  createServer,
  type IncomingMessage,
  type ServerResponse,
} from "node:http";
import type { AddressInfo } from "node:net";
import { createExactFetch } from "../../src/proxy/mod.ts";
import { until } from "../_kit/hang.ts";

interface Seen {
  readonly method: string;
  readonly rawHeaders: string[];
  readonly body: string;
}

/** A node:http server on port 0 recording each request, answering with `answer`. */
async function listen(
  answer: (
    request: IncomingMessage,
    response: ServerResponse,
  ) => unknown,
) {
  const seen: Seen[] = [];
  const closed: number[] = [];
  const server = createServer(async (request, response) => {
    const chunks: Uint8Array[] = [];
    for await (const chunk of request) chunks.push(chunk);
    seen.push({
      method: request.method!,
      rawHeaders: request.rawHeaders,
      body: new TextDecoder().decode(
        new Uint8Array(chunks.flatMap((chunk) => [...chunk])),
      ),
    });
    await answer(request, response);
  });
  server.on("connection", (socket) => {
    socket.on("close", () => closed.push(Date.now()));
  });
  await new Promise<void>((resolve) =>
    server.listen(0, "127.0.0.1", () => resolve())
  );
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    seen,
    closed,
    [Symbol.asyncDispose]: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

Deno.test("createExactFetch() sends the given method, headers and body and no others", async () => {
  await using server = await listen((_, response) => response.end("ok"));
  await using exactFetch = createExactFetch();
  const response = await exactFetch(`${server.url}/v1/things?a=1`, {
    method: "PROPPATCH",
    headers: [["X-Case", "Kept"], ["content-type", "text/plain"]],
    body: "hello",
  });
  strictEqual(await response.text(), "ok");
  const [seen] = server.seen;
  strictEqual(seen!.method, "PROPPATCH");
  strictEqual(seen!.body, "hello");
  const names = seen!.rawHeaders.filter((_, i) => i % 2 === 0);
  deepStrictEqual(names.sort(), [
    "X-Case",
    "connection",
    "content-length",
    "content-type",
    "host",
  ]);
});

Deno.test("createExactFetch() takes a Request as fetch does", async () => {
  await using server = await listen((_, response) => response.end("ok"));
  await using exactFetch = createExactFetch();
  const response = await exactFetch(
    new Request(`${server.url}/x`, {
      method: "POST",
      headers: { "x-a": "1" },
      body: "{}",
    }),
  );
  strictEqual(await response.text(), "ok");
  strictEqual(server.seen[0]!.body, "{}");
  ok(server.seen[0]!.rawHeaders.includes("x-a"));
});

Deno.test("createExactFetch() returns a redirect instead of following it", async () => {
  await using elsewhere = await listen((_, response) => response.end("moved"));
  await using server = await listen((_, response) => {
    response.writeHead(307, { location: `${elsewhere.url}/tokenize` });
    response.end();
  });
  await using exactFetch = createExactFetch();
  const response = await exactFetch(`${server.url}/tokenize`, {
    method: "POST",
    body: "{}",
  });
  strictEqual(response.status, 307);
  strictEqual(response.headers.get("location"), `${elsewhere.url}/tokenize`);
  await response.body?.cancel();
  strictEqual(elsewhere.seen.length, 0);
});

Deno.test("createExactFetch() never sends an aborted request again on a reused connection", async () => {
  let release = () => {};
  const held = new Promise<void>((resolve) => release = resolve);
  await using server = await listen(async (request, response) => {
    if (request.headers["x-slow"] !== undefined) await held;
    response.end("ok");
  });
  await using exactFetch = createExactFetch();
  // The first request leaves a kept-alive connection for the second.
  await (await exactFetch(`${server.url}/first`, { method: "POST", body: "1" }))
    .text();
  const abort = new AbortController();
  const slow = exactFetch(`${server.url}/slow`, {
    method: "POST",
    headers: [["x-slow", "1"]],
    body: "2",
    signal: abort.signal,
  });
  while (server.seen.length < 2) {
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  abort.abort(new Error("gone"));
  await rejects(slow);
  // The abort closes the connection it was sent on; a resend would be queued
  // then, ahead of the next request through the same pool.
  await until(() => server.closed.length > 0, "the aborted connection's close");
  release();
  await (await exactFetch(`${server.url}/third`, { method: "POST", body: "3" }))
    .text();
  deepStrictEqual(server.seen.map((seen) => seen.body), ["1", "2", "3"]);
});

Deno.test("createExactFetch() closes the connection of an answer cancelled mid-body", async () => {
  let release = () => {};
  const released = new Promise<void>((resolve) => release = resolve);
  await using server = await listen(async (_, response) => {
    response.writeHead(200, { "content-type": "text/event-stream" });
    response.write("data: 1\n\n");
    await released;
    response.end();
  });
  await using exactFetch = createExactFetch();
  const response = await exactFetch(`${server.url}/stream`);
  const reader = response.body!.getReader();
  strictEqual(
    new TextDecoder().decode((await reader.read()).value),
    "data: 1\n\n",
  );
  await reader.cancel();
  await until(() => server.closed.length > 0, "the aborted connection's close");
  release();
  strictEqual(server.closed.length, 1);
});

Deno.test("createExactFetch() gives no body for HEAD, 204 and 304", async () => {
  await using server = await listen((request, response) => {
    const status = Number(request.url!.slice(1));
    response.writeHead(status, { "x-status": String(status) });
    response.end();
  });
  await using exactFetch = createExactFetch();
  for (const status of [204, 304]) {
    const response = await exactFetch(`${server.url}/${status}`);
    strictEqual(response.status, status);
    strictEqual(response.body, null);
  }
  const head = await exactFetch(`${server.url}/200`, { method: "HEAD" });
  strictEqual(head.status, 200);
  strictEqual(head.body, null);
});

Deno.test("createExactFetch() keeps the reason phrase, when it is printable ASCII", async () => {
  const phrases: Record<string, [number, string]> = {
    "/fine": [200, "Fine Thanks"],
    "/empty": [200, ""],
    "/none": [204, "Nothing Here"],
    "/accent": [200, "Très Bien"],
  };
  await using server = await listen((request, response) => {
    const [status, phrase] = phrases[request.url!]!;
    response.writeHead(status, phrase);
    response.end(status === 204 ? undefined : "ok");
  });
  await using exactFetch = createExactFetch();
  const read = async (path: string) => {
    const response = await exactFetch(`${server.url}${path}`);
    await response.body?.cancel();
    return [response.status, response.statusText];
  };
  deepStrictEqual(await read("/fine"), [200, "Fine Thanks"]);
  deepStrictEqual(await read("/empty"), [200, ""]);
  deepStrictEqual(await read("/none"), [204, "Nothing Here"]);
  // Not ASCII: not written back as it came, so not passed on.
  deepStrictEqual(await read("/accent"), [200, ""]);
});
