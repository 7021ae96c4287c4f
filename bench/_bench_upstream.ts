/**
 * The fake vLLM upstream as its own process, for the benchmarks that run
 * every server apart: prints `ready <url>` once it listens, and stops on
 * SIGTERM.
 *
 *     deno run --allow-net=127.0.0.1 bench/_bench_upstream.ts MAX_MODEL_LEN
 *
 * @module
 */
import { serveFakeUpstream } from "../src/testing/mod.ts";

const maxModelLen = Number(Deno.args[0] ?? 262144);
await using upstream = await serveFakeUpstream({ maxModelLen });
// The fake keeps every request for tests; a benchmark only needs answers.
const trim = setInterval(() => upstream.requests.length = 0, 200);
const stopped = Promise.withResolvers<void>();
Deno.addSignalListener("SIGTERM", () => stopped.resolve());
console.log(`ready ${upstream.url}`);
await stopped.promise;
clearInterval(trim);
