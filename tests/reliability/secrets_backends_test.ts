/**
 * Secrets across every bundled backend: each backend is selected
 * by name from configuration that holds a distinct canary key per variable
 * and a canary in the tokenizer URL's query string, and counts a prompt full
 * of canaries against a server that answers every POST with a 500 quoting
 * the request's URL, headers and body back. No canary may reach a log
 * record, an error (message, cause chain, stack), a budget decision, or the
 * proxy's metrics and context endpoints; each key may reach only its own
 * header, and none may reach a URL or a body.
 */
import { ok, strictEqual } from "node:assert/strict";
import { dirname } from "node:path";
import { type Backend, budget, type JsonObject } from "../../mod.ts";
import { backends, loadConfig } from "../../src/config/mod.ts";
import { createProxyHandler } from "../../src/proxy/mod.ts";
import { captureLogs } from "../_kit/log_capture.ts";
import { MODEL_FILES } from "../_kit/model_files.ts";
import { errorTexts } from "../_kit/backend_kit.ts";

const CONTEXT = 65536;
const KEYS = {
  INCONTEXT_TOKENIZER_API_KEY: "sk-CANARY-TOKENIZER-3b7e1f",
  INCONTEXT_ANTHROPIC_API_KEY: "sk-ant-CANARY-ANTHROPIC-9d2c4a",
  INCONTEXT_GEMINI_API_KEY: "CANARY-GEMINI-KEY-6a1f0e",
  INCONTEXT_OPENAI_API_KEY: "sk-CANARY-OPENAI-2e8b5d",
} as const;
const URL_TOKEN = "CANARY-URL-TOKEN-c4d9a7";
const PROMPT = "CANARY-PROMPT-5f0b3e";
const CANARIES = [...Object.values(KEYS), URL_TOKEN, PROMPT];

/** Which key variable each backend sends, and in which header. */
const OWN_KEY: Record<string, [keyof typeof KEYS, string] | undefined> = {
  vllm: ["INCONTEXT_TOKENIZER_API_KEY", "authorization"],
  llamacpp: ["INCONTEXT_TOKENIZER_API_KEY", "authorization"],
  tgi: ["INCONTEXT_TOKENIZER_API_KEY", "authorization"],
  sglang: ["INCONTEXT_TOKENIZER_API_KEY", "authorization"],
  anthropic: ["INCONTEXT_ANTHROPIC_API_KEY", "x-api-key"],
  gemini: ["INCONTEXT_GEMINI_API_KEY", "x-goog-api-key"],
  openai: ["INCONTEXT_OPENAI_API_KEY", "authorization"],
  local: undefined,
  anchored: undefined,
};

function leaked(text: string): string[] {
  return CANARIES.filter((canary) => text.includes(canary));
}

interface Seen {
  readonly method: string;
  readonly path: string;
  readonly search: string;
  readonly headers: [string, string][];
  readonly body: string;
}

/** Answers server-info GETs as a healthy server would, and every POST with a 500 echoing it. */
function serveEcho(): { url: string; seen: Seen[] } & AsyncDisposable {
  const seen: Seen[] = [];
  const server = Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen() {} },
    async (request) => {
      const url = new URL(request.url);
      const body = await request.text();
      const headers = [...request.headers];
      seen.push({
        method: request.method,
        path: url.pathname,
        search: url.search,
        headers,
        body,
      });
      if (url.pathname.endsWith("/props")) {
        return Response.json({
          default_generation_settings: { n_ctx: CONTEXT },
        });
      }
      if (url.pathname.endsWith("/info")) {
        return Response.json({
          max_input_tokens: CONTEXT - 1,
          max_total_tokens: CONTEXT,
        });
      }
      // What careless servers do: quote everything back in the error.
      return Response.json({
        error: {
          message: `Bad request to ${request.url}: ${
            JSON.stringify(headers)
          } ${body}`,
        },
      }, { status: 500 });
    },
  );
  return {
    url: `http://127.0.0.1:${server.addr.port}`,
    seen,
    [Symbol.asyncDispose]: () => server.shutdown(),
  };
}

function requestFor(name: string): JsonObject {
  const model = name === "anthropic"
    ? "claude-sonnet-4-5"
    : name === "gemini"
    ? "gemini-2.5-flash"
    : name === "openai"
    ? "gpt-4o"
    : "m";
  return {
    model,
    messages: [
      { role: "system", content: `Be terse. ${PROMPT}` },
      { role: "user", content: `What is ${PROMPT}?` },
    ],
  };
}

Deno.test("no bundled backend leaks a key, the URL token or the prompt", async (t) => {
  const qwen3 = dirname(
    MODEL_FILES.find((files) => files.family === "qwen3")!.tokenizerPath,
  );
  await using echo = serveEcho();
  const names = backends.names();
  // Every bundled backend is covered: a new one must be added to OWN_KEY.
  strictEqual(
    [...names].sort().join(","),
    Object.keys(OWN_KEY).sort().join(","),
  );
  for (const name of names) {
    await t.step(name, async () => {
      const base = name === "vllm" ? `${echo.url}/tokenize` : `${echo.url}/api`;
      const config = loadConfig({
        ...KEYS,
        INCONTEXT_BACKEND: name,
        INCONTEXT_TOKENIZER_URL: `${base}?token=${URL_TOKEN}`,
        INCONTEXT_TOKENIZER_DIR: qwen3,
        INCONTEXT_CONTEXT_LENGTH: String(CONTEXT),
        INCONTEXT_COMPRESSION_WINDOW_TOKENS: "50000",
      });
      const backend: Backend = await backends.load(name, config);
      echo.seen.length = 0;
      await using logs = await captureLogs();
      const request = requestFor(name);
      const texts: string[] = [];
      // The count itself: its error (if any) and everything in it. The
      // openai backend counts chat locally: a Responses request reaches it.
      const counts: [JsonObject, "chat" | "responses"][] = [[request, "chat"]];
      if (name === "openai") {
        counts.push([
          { model: "gpt-4o", input: `What is ${PROMPT}?` },
          "responses",
        ]);
      }
      for (const [body, kind] of counts) {
        try {
          await backend.count(body, { contextLength: CONTEXT, kind });
        } catch (error) {
          texts.push(...errorTexts(error));
        }
      }
      // budget(), and the proxy's own endpoints after a budgeted request.
      const result = await budget(request, {
        window: 50000,
        contextLength: CONTEXT,
        backend,
      });
      texts.push(JSON.stringify({ ...result, request: undefined }));
      const proxy = createProxyHandler({
        upstream: echo.url,
        window: 50000,
        contextLength: CONTEXT,
        backend,
      });
      const sent = await proxy(
        new Request("http://proxy.test/v1/chat/completions", {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify(requestFor(name)),
        }),
      );
      await sent.body?.cancel();
      texts.push(
        [...sent.headers].filter(([h]) => h.startsWith("x-incontext"))
          .join("\n"),
      );
      for (const path of ["/incontext/metrics", "/incontext/context"]) {
        const own = await proxy(new Request(`http://proxy.test${path}`));
        texts.push(await own.text());
      }
      texts.push(...logs.lines);
      for (const text of texts) {
        strictEqual(
          leaked(text).join(","),
          "",
          `${name} leaked into: ${text.slice(0, 200)}`,
        );
      }
      // The trap was set: the server saw the prompt and this backend's own key.
      const own = OWN_KEY[name];
      if (own !== undefined) {
        ok(
          echo.seen.some((seen) => seen.body.includes(PROMPT)),
          `${name} sent no prompt`,
        );
        ok(
          echo.seen.some((seen) =>
            seen.headers.some(([h, v]) =>
              h === own[1] && v.includes(KEYS[own[0]])
            )
          ),
          `${name} never sent its own key`,
        );
      }
      // Keys: only this backend's own, only in its own header, only to the counting server.
      for (const seen of echo.seen) {
        ok(!leaked(seen.path).length, `${name} put a canary in a path`);
        for (const [key, value] of Object.entries(KEYS)) {
          ok(!seen.body.includes(value), `${name} sent ${key} in a body`);
          ok(!seen.search.includes(value), `${name} sent ${key} in a URL`);
          for (const [header, text] of seen.headers) {
            if (!text.includes(value)) continue;
            const mine = own !== undefined && own[0] === key &&
              own[1] === header &&
              seen.path.startsWith(name === "vllm" ? "/tokenize" : "/api");
            // The proxy forwards the client's own headers; the client sent no key.
            ok(mine, `${name} sent ${key} in ${header} to ${seen.path}`);
          }
        }
      }
    });
  }
});
