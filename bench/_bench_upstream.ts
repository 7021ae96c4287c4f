/**
 * The fake vLLM upstream as its own process, for the benchmarks that run
 * every server apart: prints `ready <url>` once it listens, and stops on
 * SIGTERM.
 *
 *     deno run --allow-net=127.0.0.1 bench/_bench_upstream.ts MAX_MODEL_LEN [--usage-from-bench]
 *
 * With `--usage-from-bench`, `usage.prompt_tokens` (and the length check) of
 * a chat request is the count the benchmark posted to `USAGE_PATH` for its
 * messages, and a quarter of the messages' JSON length for one it did not;
 * chat replies follow `replyTo()`.
 *
 * @module
 */
import { createFakeUpstreamHandler } from "../src/testing/mod.ts";
import { replyTo, USAGE_PATH, usageKey } from "./_bench_upstream_rules.ts";

const maxModelLen = Number(Deno.args[0] ?? 262144);
const fromBench = Deno.args.includes("--usage-from-bench");
const counts = new Map<string, number>();

function countTokens(body: { readonly [key: string]: unknown }): number {
  const messages = Array.isArray(body.messages) ? body.messages : [];
  return counts.get(usageKey(messages)) ??
    Math.ceil(JSON.stringify(body.messages ?? body.prompt ?? "").length / 4);
}

function reply(body: { readonly [key: string]: unknown }): string {
  return replyTo(Array.isArray(body.messages) ? body.messages : []);
}

const fake = createFakeUpstreamHandler({
  maxModelLen,
  // A benchmark only needs answers, not the fake's record of every request.
  recordRequests: false,
  ...(fromBench ? { countTokens, reply } : {}),
});

async function handle(request: Request): Promise<Response> {
  if (new URL(request.url).pathname !== USAGE_PATH) {
    return await fake.handler(request);
  }
  const { key, count } = await request.json();
  counts.set(key, count);
  return new Response(null, { status: 204 });
}

const listening = Promise.withResolvers<Deno.NetAddr>();
const server = Deno.serve({
  hostname: "127.0.0.1",
  port: 0,
  onListen: (addr) => listening.resolve(addr),
}, handle);
const { port } = await listening.promise;
const stopped = Promise.withResolvers<void>();
Deno.addSignalListener("SIGTERM", () => stopped.resolve());
console.log(`ready http://127.0.0.1:${port}`);
await stopped.promise;
await server.shutdown();
