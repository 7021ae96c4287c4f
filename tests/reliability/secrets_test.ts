/**
 * Secrets: canary strings in prompts, tool arguments, API
 * keys (the client's and the tokenizer's), the tokenizer URL's query string
 * and upstream error bodies that echo the request, across the vLLM backend
 * and every proxy path. None may appear in a log record, the metrics, an
 * error incontext writes, or an `x-incontext-*` header; the tokenizer gets
 * only its own key.
 */
import { deepStrictEqual, ok, rejects, strictEqual } from "node:assert/strict";
import { CountError } from "../../mod.ts";
import { createCountCache } from "../../src/cache/mod.ts";
import { VllmBackend } from "../../src/backends/vllm/mod.ts";
import { captureLogs } from "../_kit/log_capture.ts";
import { HANG_MS } from "../_kit/hang.ts";
import {
  CANARY,
  leaked,
  type Mode,
  serveSecretUpstream,
} from "./_proxy_secret_upstream.ts";
import { serveProxy } from "./_proxy_serve.ts";
import { freePort, spawnProxy } from "./_proxy_spawn.ts";

let turn = 0;

/** A chat body full of canaries; each call is a new conversation (no cache hit). */
function chatBody(extra: Record<string, unknown> = {}) {
  turn++;
  return {
    model: "m",
    messages: [
      { role: "user", content: `${CANARY.prompt} turn ${turn}` },
      {
        role: "assistant",
        content: null,
        tool_calls: [{
          id: "call_1",
          type: "function",
          function: {
            name: "lookup",
            arguments: JSON.stringify({ query: CANARY.tool }),
          },
        }],
      },
      { role: "tool", tool_call_id: "call_1", content: CANARY.tool },
    ],
    ...extra,
  };
}

/** One exchange with the proxy, and what of it incontext wrote. */
interface Exchange {
  readonly path: string;
  readonly status: number;
  /** The `x-incontext-*` headers. */
  readonly added: string;
  /** The body, when incontext wrote it (not the upstream's passed through). */
  readonly own?: string;
}

/** Sends through the proxy with the client's key; keeps what incontext wrote. */
async function exchange(
  url: string,
  path: string,
  init: RequestInit & { own: boolean },
): Promise<Exchange> {
  const headers = new Headers(init.headers);
  headers.set("authorization", `Bearer ${CANARY.clientKey}`);
  const response = await fetch(`${url}${path}`, { ...init, headers });
  const added = [...response.headers]
    .filter(([name]) => name.startsWith("x-incontext-"))
    .map(([name, value]) => `${name}: ${value}`).join("\n");
  const text = await response.text().catch(() => "");
  return {
    path,
    status: response.status,
    added,
    ...(init.own ? { own: text } : {}),
  };
}

function post(
  body: string | Uint8Array<ArrayBuffer> | Record<string, unknown>,
  own: boolean,
): RequestInit & { own: boolean } {
  return {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: typeof body === "string" || body instanceof Uint8Array
      ? body
      : JSON.stringify(body),
    own,
  };
}

const CHAT = "/v1/chat/completions";

Deno.test("no canary leaks from the proxy on any path", async (t) => {
  await using logs = await captureLogs();
  await using upstream = serveSecretUpstream();
  await using cache = createCountCache({ inProcess: true });
  // No path here is decided by the clock but the stall, which has a proxy
  // of its own: a slow answer on a busy machine is still the same answer.
  const backend = new VllmBackend({
    url: upstream.tokenizerUrl,
    apiKey: CANARY.tokenizerKey,
    timeoutSeconds: HANG_MS / 1000,
    cache,
  });
  await using proxy = serveProxy(upstream.url, {
    backend,
    cache,
    maxRequestBytes: 1024 * 1024,
    upstreamTimeoutSeconds: HANG_MS / 1000,
  });
  await using impatient = serveProxy(upstream.url, {
    backend,
    cache,
    maxRequestBytes: 1024 * 1024,
    upstreamTimeoutSeconds: 0.5,
  });
  const exchanges: Exchange[] = [];
  const run = async (
    name: string,
    path: string,
    init: RequestInit & { own: boolean },
    status: number,
    via = proxy,
  ) => {
    await t.step(name, async () => {
      const result = await exchange(via.url, path, init);
      exchanges.push(result);
      strictEqual(result.status, status, `${name}: ${result.own}`);
      deepStrictEqual(leaked(result.added), [], result.added);
      deepStrictEqual(leaked(result.own ?? ""), [], result.own);
    });
  };

  await run("success: chat", CHAT, post(chatBody(), false), 200);
  await run(
    "success: streamed chat",
    CHAT,
    post(chatBody({ stream: true }), false),
    200,
  );
  await run(
    "success: completions",
    "/v1/completions",
    post({ model: "m", prompt: CANARY.prompt }, false),
    200,
  );
  await run(
    "success: responses",
    "/v1/responses",
    post({ model: "m", input: CANARY.prompt }, false),
    200,
  );
  upstream.mode = "echo-tokenize-errors";
  await run(
    "fallback: the tokenizer echoes the prompt in a 503",
    CHAT,
    post(chatBody(), false),
    200,
  );
  strictEqual(exchanges.at(-1)!.added.includes("rough-fallback"), true);
  upstream.mode = "echo-tokenize-refusals";
  await run(
    "refusal: the tokenizer refuses the request and echoes the prompt in a 400",
    CHAT,
    post(chatBody(), false),
    200,
  );
  strictEqual(exchanges.at(-1)!.added.includes("unchanged"), true);
  upstream.mode = "echo-tokenize-errors";
  await run("healthz with the tokenizer failing", "/incontext/healthz", {
    own: true,
  }, 503);
  upstream.mode = "echo-errors";
  await run(
    "failure: the upstream echoes the prompt in a 500",
    CHAT,
    post(chatBody(), false),
    500,
  );
  upstream.mode = "stall";
  await run(
    "504: the upstream stalls",
    CHAT,
    post(chatBody(), true),
    504,
    impatient,
  );
  upstream.mode = "normal";
  await run(
    "reject: a prompt beyond the context",
    CHAT,
    post(
      {
        model: "m",
        messages: [{
          role: "user",
          content: `${CANARY.prompt} ${"lorem ".repeat(60_000)}`,
        }],
      },
      true,
    ),
    400,
  );
  await run(
    "413: a body over the byte limit",
    CHAT,
    post({ ...chatBody(), padding: CANARY.prompt.repeat(60_000) }, true),
    413,
  );
  await run(
    "400: malformed JSON",
    CHAT,
    post(`{"messages":[{"role":"user","content":"${CANARY.prompt}`, true),
    400,
  );
  await run(
    "400: invalid UTF-8",
    CHAT,
    post(
      new Uint8Array([
        ...new TextEncoder().encode(`{"content":"${CANARY.prompt}`),
        0xff,
        ...new TextEncoder().encode('"}'),
      ]),
      true,
    ),
    400,
  );
  await run("pass-through: /v1/models", "/v1/models", { own: false }, 200);
  await run("healthz", "/incontext/healthz", { own: true }, 200);
  await run("metrics", "/incontext/metrics", { own: true }, 200);
  await run("context", "/incontext/context", { own: true }, 200);

  await t.step("502: the upstream is down", async () => {
    await using down = serveProxy(`http://127.0.0.1:${freePort()}`, {
      backend,
    });
    const result = await exchange(down.url, CHAT, post(chatBody(), true));
    strictEqual(result.status, 502);
    deepStrictEqual(leaked(result.own! + result.added), []);
    deepStrictEqual(down.errors, []);
  });

  await t.step("no canary in any log record", () => {
    const text = logs.lines.join("\n");
    // The fallback, the 504 and the 502 were logged: the check has teeth.
    ok(/rough estimate/.test(text) && /upstream/.test(text), text);
    deepStrictEqual(leaked(text), []);
  });
  await t.step("no canary in the metrics, and no handler errors", async () => {
    const metrics = await (await fetch(`${proxy.url}/incontext/metrics`))
      .text();
    ok(metrics.includes("incontext_requests_total"));
    deepStrictEqual(leaked(metrics), []);
    deepStrictEqual(proxy.errors, []);
  });
  await t.step(
    "the tokenizer gets only its own key; the upstream gets the client's",
    () => {
      const tokenize = upstream.seen.filter((s) => s.path === "/tokenize");
      const generation = upstream.seen.filter((s) => s.path === CHAT);
      ok(tokenize.length >= 5 && generation.length >= 3);
      for (const seen of tokenize) {
        strictEqual(seen.authorization, `Bearer ${CANARY.tokenizerKey}`);
        strictEqual(seen.search, `?token=${CANARY.urlToken}`);
      }
      for (const seen of generation) {
        strictEqual(seen.authorization, `Bearer ${CANARY.clientKey}`);
      }
    },
  );
});

/** Every message along an error's cause chain. */
function messages(error: unknown): string {
  const parts: string[] = [];
  for (let e = error, depth = 0; e instanceof Error && depth < 10; depth++) {
    parts.push(`${e.name}: ${e.message}`);
    e = e.cause;
  }
  return parts.join("\n");
}

Deno.test("the vllm backend's count errors carry no canary", async (t) => {
  await using logs = await captureLogs();
  await using upstream = serveSecretUpstream();
  const request = chatBody();
  const count = (url: string) =>
    new VllmBackend({
      url,
      apiKey: CANARY.tokenizerKey,
      timeoutSeconds: HANG_MS / 1000,
      cache: null,
    }).count(request, { contextLength: 65536 });
  await t.step("a 400 that echoes the prompt", async () => {
    upstream.mode = "echo-tokenize-errors";
    await rejects(count(upstream.tokenizerUrl), (error: unknown) => {
      ok(error instanceof CountError);
      deepStrictEqual(leaked(messages(error)), [], messages(error));
      return true;
    });
  });
  await t.step("a tokenizer that refuses connections", async () => {
    const url =
      `http://127.0.0.1:${freePort()}/tokenize?token=${CANARY.urlToken}`;
    await rejects(count(url), (error: unknown) => {
      ok(error instanceof CountError);
      deepStrictEqual(leaked(error.message), [], error.message);
      return true;
    });
  });
  deepStrictEqual(leaked(logs.lines.join("\n")), []);
});

Deno.test("examples/server.ts prints no canary", async () => {
  await using upstream = serveSecretUpstream();
  await using proxy = await spawnProxy(upstream.url, {
    INCONTEXT_TOKENIZER_URL: upstream.tokenizerUrl,
    INCONTEXT_TOKENIZER_API_KEY: CANARY.tokenizerKey,
    INCONTEXT_UPSTREAM_TIMEOUT_SECONDS: "0.5",
  });
  // Fresh conversations in each mode, so no count comes from the cache.
  const paths = (): [string, RequestInit & { own: boolean }][] => [
    [CHAT, post(chatBody(), false)],
    [CHAT, post(chatBody({ stream: true }), false)],
    [CHAT, post(`{"content":"${CANARY.prompt}`, true)],
    ["/incontext/healthz", { own: true }],
    ["/incontext/metrics", { own: true }],
  ];
  const modes = ["normal", "echo-tokenize-errors", "echo-errors", "stall"];
  for (const mode of modes as Mode[]) {
    upstream.mode = mode;
    for (const [path, init] of paths()) {
      const result = await exchange(proxy.url, path, init);
      deepStrictEqual(leaked(result.added + (result.own ?? "")), [], path);
    }
  }
  upstream.mode = "normal";
  proxy.child.kill("SIGTERM");
  strictEqual((await proxy.child.status).code, 0);
  await proxy.stdout.done;
  await proxy.stderr.done;
  const output = proxy.stdout.text + proxy.stderr.text;
  ok(/rough estimate/.test(output), output); // the fallback was logged
  deepStrictEqual(leaked(output), [], output);
});
