/**
 * Count endpoints never follow redirects: every bundled backend that counts
 * over HTTP is pointed at a server answering each request with a 307 to a
 * second listener. The count fails with its own error type, budget() falls
 * back to its estimate, and the second listener receives nothing: the
 * prompt never travels to where a redirect points.
 */
import { ok, strictEqual } from "node:assert/strict";
import { dirname } from "node:path";
import { type Backend, budget, type JsonObject } from "../../mod.ts";
import { backends, loadConfig } from "../../src/config/mod.ts";
import { MODEL_FILES } from "../_kit/model_files.ts";

const CONTEXT = 65536;
const PROMPT = "CANARY-REDIRECTED-PROMPT-71c0";
/** The backends that count in process: no HTTP, nothing to redirect. */
const IN_PROCESS = new Set(["local", "anchored"]);

/** A listener that records whatever reaches it. */
function serveTrap(): { url: string; hits: string[] } & AsyncDisposable {
  const hits: string[] = [];
  const server = Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen() {} },
    async (request) => {
      hits.push(`${request.method} ${new URL(request.url).pathname}`);
      await request.body?.cancel();
      return Response.json({ tokens: [1], count: 1, input_tokens: 1 });
    },
  );
  return {
    url: `http://127.0.0.1:${server.addr.port}`,
    hits,
    [Symbol.asyncDispose]: () => server.shutdown(),
  };
}

/** Answers every request with a 307 to the same path on `target`. */
function serveRedirect(target: string): { url: string } & AsyncDisposable {
  const server = Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen() {} },
    async (request) => {
      await request.body?.cancel();
      const url = new URL(request.url);
      return new Response(null, {
        status: 307,
        headers: { location: `${target}${url.pathname}${url.search}` },
      });
    },
  );
  return {
    url: `http://127.0.0.1:${server.addr.port}`,
    [Symbol.asyncDispose]: () => server.shutdown(),
  };
}

function requestFor(name: string): [JsonObject, "chat" | "responses"] {
  const content = `What is ${PROMPT}?`;
  switch (name) {
    case "anthropic":
      return [{
        model: "claude-sonnet-4-5",
        messages: [{ role: "user", content }],
      }, "chat"];
    case "gemini":
      return [{
        model: "gemini-2.5-flash",
        messages: [{ role: "user", content }],
      }, "chat"];
    case "openai":
      // Chat is counted in process; a Responses request goes to the server.
      return [{ model: "gpt-4o", input: content }, "responses"];
    default:
      return [{ model: "m", messages: [{ role: "user", content }] }, "chat"];
  }
}

Deno.test("backend.count() does not follow a redirect from a count endpoint", async (t) => {
  const qwen3 = dirname(
    MODEL_FILES.find((files) => files.family === "qwen3")!.tokenizerPath,
  );
  await using trap = serveTrap();
  await using redirect = serveRedirect(trap.url);
  const names = backends.names().filter((name) => !IN_PROCESS.has(name));
  ok(names.length >= 7, `only ${names.join(",")} count over HTTP`);
  for (const name of names) {
    await t.step(name, async () => {
      const base = name === "vllm"
        ? `${redirect.url}/tokenize`
        : `${redirect.url}/api`;
      const config = loadConfig({
        INCONTEXT_BACKEND: name,
        INCONTEXT_TOKENIZER_URL: base,
        INCONTEXT_TOKENIZER_API_KEY: "sk-tokenizer",
        INCONTEXT_ANTHROPIC_API_KEY: "sk-ant",
        INCONTEXT_GEMINI_API_KEY: "gemini-key",
        INCONTEXT_OPENAI_API_KEY: "sk-openai",
        INCONTEXT_TOKENIZER_DIR: qwen3,
        INCONTEXT_CONTEXT_LENGTH: String(CONTEXT),
        INCONTEXT_COMPRESSION_WINDOW_TOKENS: "50000",
      });
      const backend: Backend = await backends.load(name, config);
      const [request, kind] = requestFor(name);
      let failure: unknown;
      try {
        await backend.count(request, { contextLength: CONTEXT, kind });
      } catch (error) {
        failure = error;
      }
      ok(failure instanceof Error, `${name} counted through a redirect`);
      strictEqual(failure.name, "CountRedirectError");
      ok(!failure.message.includes(trap.url), "the target is not named");
      const result = await budget(request, {
        window: 50000,
        contextLength: CONTEXT,
        backend,
        kind,
      });
      strictEqual(result.source, "rough-fallback");
      strictEqual(trap.hits.join(","), "", `${name} followed the redirect`);
    });
  }
});
