// The Node 20 proof: `prove.ts` installs the packed package into a fresh
// Node project and runs this file there with `node --test`. It imports the
// package by its name, the way a Node user would, so it only runs there.
import { execFile } from "node:child_process";
import { readFile } from "node:fs/promises";
import { createServer } from "node:http";
import { fileURLToPath } from "node:url";
import { test } from "node:test";
import { deepStrictEqual, ok, rejects, strictEqual } from "node:assert/strict";
import OpenAI from "openai";
import * as root from "@incontext/incontext";
import * as vllm from "@incontext/incontext/vllm";
import * as config from "@incontext/incontext/config";
import * as cache from "@incontext/incontext/cache";
import * as worker from "@incontext/incontext/count-worker";
import * as fetchEntry from "@incontext/incontext/fetch";
import * as middleware from "@incontext/incontext/middleware";
import * as testing from "@incontext/incontext/testing";
import * as local from "@incontext/incontext/local";

const CONTEXT = 65536;
const WINDOW = 55705;
const COUNT = 1705;
const CONCURRENT = 50;

function chat(text) {
  return {
    model: "qwen",
    max_tokens: CONTEXT,
    messages: [{ role: "user", content: text }],
  };
}

/** Turns a Node request into a Web `Request`, as a Node server adapter does. */
async function toRequest(req) {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  const headers = new Headers();
  for (let i = 0; i < req.rawHeaders.length; i += 2) {
    headers.append(req.rawHeaders[i], req.rawHeaders[i + 1]);
  }
  const hasBody = req.method !== "GET" && req.method !== "HEAD";
  return new Request(`http://${req.headers.host}${req.url}`, {
    method: req.method,
    headers,
    body: hasBody ? Buffer.concat(chunks) : undefined,
  });
}

/** Serves a runtime-neutral handler with `node:http` on port 0. */
async function serve(handler) {
  const server = createServer((req, res) => {
    toRequest(req).then(handler).then(async (response) => {
      res.writeHead(response.status, Object.fromEntries(response.headers));
      res.end(Buffer.from(await response.arrayBuffer()));
    }).catch(() => {
      res.writeHead(500).end();
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address();
  return {
    origin: `http://127.0.0.1:${port}`,
    url: `http://127.0.0.1:${port}/tokenize`,
    close() {
      // fetch keeps connections alive; close them so close() can finish.
      server.closeAllConnections();
      return new Promise((resolve) => server.close(resolve));
    },
  };
}

/** Runs ESM `code` in a child Node from this project; resolves with its exit. */
function runNode(code, timeout) {
  return new Promise((resolve) => {
    const args = ["--input-type=module", "--eval", code];
    const options = {
      cwd: fileURLToPath(new URL(".", import.meta.url)),
      timeout,
    };
    execFile(process.execPath, args, options, (error, stdout, stderr) => {
      resolve({
        code: error ? error.code : 0,
        signal: error?.signal ?? null,
        stdout,
        stderr,
      });
    });
  });
}

test("every entry in exports imports by the package name", () => {
  strictEqual(typeof root.budget, "function");
  strictEqual(typeof root.VERSION, "string");
  // One module instance per file: the entries share the contract's classes.
  ok(vllm.VllmBackend.prototype instanceof root.Backend);
  strictEqual(typeof cache.createCountCache, "function");
  // The worker entry exports nothing and does nothing on the main thread.
  strictEqual(Object.keys(worker).length, 0);
  strictEqual(typeof testing.createFakeVllmTokenizerHandler, "function");
  strictEqual(typeof testing.FakeBackend, "function");
  strictEqual(typeof fetchEntry.budgetedFetch, "function");
  strictEqual(typeof middleware.budgetMiddleware, "function");
});

test("every entry the installed package.json exports imports under Node", async () => {
  const manifest = JSON.parse(
    await readFile(
      new URL(
        "node_modules/@incontext/incontext/package.json",
        import.meta.url,
      ),
      "utf8",
    ),
  );
  const entries = Object.keys(manifest.exports);
  ok(entries.length >= 6, `only ${entries.length} entries`);
  for (const entry of entries) {
    const specifier = `${manifest.name}${entry.slice(1)}`;
    const namespace = await import(specifier);
    if (entry !== "./count-worker") {
      ok(Object.keys(namespace).length > 0, `${specifier} exports nothing`);
    }
  }
});

test("usage anchors keep a parsed '__proto__' key apart under Node", async () => {
  // Node, unlike Deno, still has the __proto__ setter: a key written by
  // assignment would vanish (or set a prototype) and two messages would match.
  const { AnchorStore } = await import("@incontext/incontext/anchored");
  const store = new AnchorStore();
  const usage = { promptTokens: 9, completionTokens: 1 };
  const odd = JSON.parse('{"__proto__":"x","role":"user","content":"hi"}');
  store.record("m", [odd], usage);
  strictEqual(store.lookup("m", [{ role: "user", content: "hi" }]), undefined);
  deepStrictEqual(store.lookup("m", [odd]), { ...usage, prefixLength: 1 });
});

test("backends.load() imports each bundled backend by name under Node", async () => {
  const loaded = config.loadConfig({
    INCONTEXT_TOKENIZER_URL: "http://127.0.0.1:8000/tokenize",
    INCONTEXT_TOKENIZER_DIR: "/nonexistent/model",
    INCONTEXT_ANTHROPIC_API_KEY: "sk-ant-test",
    INCONTEXT_GEMINI_API_KEY: "gemini-test",
  });
  const names = config.backends.names();
  strictEqual(names.length, 9);
  for (const name of names) {
    const backend = await config.backends.load(name, loaded);
    const entry = await import(`@incontext/incontext/${name}`);
    const classes = Object.values(entry).filter((value) =>
      typeof value === "function" && value.prototype instanceof root.Backend
    );
    strictEqual(classes.length, 1, name);
    ok(backend instanceof classes[0], name);
  }
});

test("loadConfig() reads an environment object under Node", () => {
  const loaded = config.loadConfig({
    INCONTEXT_TOKENIZER_URL: "http://127.0.0.1:8000/tokenize",
  });
  strictEqual(loaded.tokenizerUrl, "http://127.0.0.1:8000/tokenize");
  ok(Object.isFrozen(loaded));
});

test("serveFakeVllmTokenizer() refuses to run outside Deno", async () => {
  await rejects(testing.serveFakeVllmTokenizer(), TypeError);
});

test("budget() with VllmBackend budgets against a node:http vLLM server", async (t) => {
  const fake = testing.createFakeVllmTokenizerHandler({
    maxModelLen: CONTEXT,
    countTokens: () => COUNT,
  });
  const server = await serve(fake.handler);
  const countCache = cache.createCountCache();
  const options = {
    window: WINDOW,
    contextLength: CONTEXT,
    backend: new vllm.VllmBackend({ url: server.url, cache: countCache }),
  };
  try {
    await t.test(
      `${CONCURRENT} concurrent identical calls on a cold worker cache make one /tokenize request`,
      async () => {
        const results = await Promise.all(
          Array.from(
            { length: CONCURRENT },
            () => root.budget(chat("hello"), options),
          ),
        );
        strictEqual(fake.requests.length, 1);
        strictEqual(fake.requests[0].path, "/tokenize");
        for (const result of results) {
          strictEqual(result.action, "set");
          strictEqual(result.source, "vllm-tokenize");
          strictEqual(result.promptTokens, COUNT);
          strictEqual(result.request.max_tokens, WINDOW - COUNT);
        }
      },
    );

    await t.test("the cache ran in a node:worker_threads worker", async () => {
      // A worker that failed to load would have moved the cache in process.
      strictEqual(countCache.kind, "worker_threads");
      const stats = await countCache.stats();
      strictEqual(stats.entries, 1);
      strictEqual(stats.misses, CONCURRENT);
    });

    await t.test("a repeat is served from the cache", async () => {
      const result = await root.budget(chat("hello"), options);
      strictEqual(result.request.max_tokens, WINDOW - COUNT);
      strictEqual(fake.requests.length, 1);
    });

    await t.test("an HTTP 500 falls back to the rough estimate", async () => {
      fake.fault = "http-500";
      const result = await root.budget(chat("a server fault"), {
        ...options,
        estimate: () => 300,
      });
      fake.fault = "none";
      strictEqual(result.action, "set");
      strictEqual(result.source, "rough-fallback");
      strictEqual(result.request.max_tokens, WINDOW - 300 - 1024);
      strictEqual(fake.requests.length, 2);
    });
  } finally {
    await countCache[Symbol.asyncDispose]();
    await server.close();
  }
  await rejects(
    countCache.getOrCount("key", () => Promise.resolve(1)),
    root.CountError,
  );
});

test("LocalBackend loads, counts and tokenizes inside the worker under Node", async () => {
  const dir = fileURLToPath(new URL("./model_folder/", import.meta.url));
  const countCache = cache.createCountCache();
  const inWorker = new local.LocalBackend({ dir, cache: countCache });
  const here = new local.LocalBackend({ dir, cache: null });
  const request = { messages: [{ role: "user", content: "hello world" }] };
  try {
    // "<s>" + "hello world": the template's BOS and two tokens.
    strictEqual(await inWorker.count(request, { contextLength: 8192 }), 3);
    strictEqual(await here.count(request, { contextLength: 8192 }), 3);
    strictEqual(countCache.kind, "worker_threads");
    strictEqual((await countCache.stats()).modelLoads, 1);
    // The tokenize server's work crosses to the same worker and model.
    const body = { prompt: "hello world", add_special_tokens: false };
    const ids = await inWorker.tokenize(body);
    deepStrictEqual(ids, await here.tokenize(body));
    strictEqual(await inWorker.detokenize(ids), await here.detokenize(ids));
    deepStrictEqual(
      await inWorker.tokenStrings(ids),
      await here.tokenStrings(ids),
    );
    strictEqual((await countCache.stats()).modelLoads, 1);
  } finally {
    await inWorker[Symbol.asyncDispose]();
    await here[Symbol.asyncDispose]();
    await countCache[Symbol.asyncDispose]();
  }
});

test("an idle worker cache does not keep Node alive", async () => {
  // Not disposed on purpose: the process must still end by itself.
  const code = `
    import { createCountCache } from "@incontext/incontext/cache";
    const cache = createCountCache();
    await cache.getOrCount("key", () => Promise.resolve(7));
    console.log(cache.kind);
  `;
  const exit = await runNode(code, 20_000);
  strictEqual(exit.signal, null, "the child was killed: it did not exit");
  strictEqual(exit.stderr, "");
  strictEqual(exit.code, 0);
  strictEqual(exit.stdout.trim(), "worker_threads");
});

/** A chat completions upstream: records each body, answers with usage. */
function chatCompletionsUpstream(bodies) {
  return async (request) => {
    const { pathname } = new URL(request.url);
    if (request.method !== "POST" || pathname !== "/v1/chat/completions") {
      return new Response("Not Found", { status: 404 });
    }
    const body = await request.json();
    bodies.push(body);
    return Response.json({
      id: "chatcmpl-node-proof",
      object: "chat.completion",
      created: 1,
      model: body.model,
      choices: [{
        index: 0,
        message: { role: "assistant", content: "Hello from upstream" },
        finish_reason: "stop",
      }],
      usage: {
        prompt_tokens: COUNT,
        completion_tokens: 4,
        total_tokens: COUNT + 4,
      },
    });
  };
}

test("budgetedFetch() budgets the real openai SDK's requests under Node", async () => {
  const fake = testing.createFakeVllmTokenizerHandler({
    maxModelLen: CONTEXT,
    countTokens: () => COUNT,
  });
  const tokenizer = await serve(fake.handler);
  const bodies = [];
  const upstream = await serve(chatCompletionsUpstream(bodies));
  try {
    const backend = new vllm.VllmBackend({ url: tokenizer.url, cache: null });
    const client = new OpenAI({
      baseURL: `${upstream.origin}/v1`,
      apiKey: "sk-test",
      fetch: fetchEntry.budgetedFetch(globalThis.fetch, {
        window: WINDOW,
        contextLength: CONTEXT,
        backend,
      }),
      maxRetries: 0,
    });
    const completion = await client.chat.completions.create({
      model: "qwen",
      max_completion_tokens: CONTEXT,
      messages: [{ role: "user", content: "hello" }],
    });
    strictEqual(completion.choices[0].message.content, "Hello from upstream");
    strictEqual(completion.usage.prompt_tokens, COUNT);
    strictEqual(fake.requests.length, 1);
    strictEqual(fake.requests[0].path, "/tokenize");
    strictEqual(bodies.length, 1);
    // The caller's field is kept, its value is the budget, no alias is added.
    strictEqual(bodies[0].max_completion_tokens, WINDOW - COUNT);
    strictEqual(bodies[0].max_tokens, undefined);
    deepStrictEqual(bodies[0].messages, [{ role: "user", content: "hello" }]);
  } finally {
    await upstream.close();
    await tokenizer.close();
  }
});

test("budgetMiddleware() budgets a Web Request under Node", async () => {
  const budgeted = middleware.budgetMiddleware({
    window: WINDOW,
    contextLength: CONTEXT,
    backend: new testing.FakeBackend({ count: COUNT }),
  });
  const response = await budgeted(
    new Request("http://proxy.test/v1/chat/completions", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(chat("hello")),
    }),
    async (request) => Response.json(await request.json()),
  );
  strictEqual(response.status, 200);
  strictEqual((await response.json()).max_tokens, WINDOW - COUNT);
  strictEqual(response.headers.get("x-incontext-action"), "set");
  strictEqual(
    response.headers.get("x-incontext-max-tokens"),
    String(WINDOW - COUNT),
  );
});

test("createExactFetch() forwards exactly through the proxy under Node", async () => {
  const { createExactFetch, createProxyHandler } = await import(
    "@incontext/incontext/proxy"
  );
  const seen = [];
  const upstream = createServer((request, response) => {
    let body = "";
    request.on("data", (chunk) => body += chunk);
    request.on("end", () => {
      seen.push({ headers: request.rawHeaders, body: JSON.parse(body) });
      response.setHeader("content-type", "application/json");
      response.end(JSON.stringify({ choices: [] }));
    });
  });
  await new Promise((resolve) => upstream.listen(0, "127.0.0.1", resolve));
  const exactFetch = createExactFetch();
  try {
    const proxy = createProxyHandler({
      upstream: `http://127.0.0.1:${upstream.address().port}`,
      window: WINDOW,
      contextLength: CONTEXT,
      backend: new testing.FakeBackend({ count: COUNT }),
      fetch: exactFetch,
    });
    const response = await proxy(
      new Request("http://proxy.test/v1/chat/completions", {
        method: "POST",
        headers: { "content-type": "application/json", "x-client": "1" },
        body: JSON.stringify(chat("hello")),
      }),
    );
    strictEqual(response.status, 200);
    await response.arrayBuffer();
    strictEqual(seen[0].body.max_tokens, WINDOW - COUNT);
    const names = seen[0].headers.filter((_, i) => i % 2 === 0).sort();
    deepStrictEqual(names, [
      "accept-encoding",
      "connection",
      "content-length",
      "content-type",
      "host",
      "x-client",
    ]);
  } finally {
    await exactFetch[Symbol.asyncDispose]();
    await new Promise((resolve) => upstream.close(resolve));
  }
});
