/**
 * The `incontext` command line (Deno only): the budgeting proxy, its
 * `check` and `count`, the vLLM-compatible tokenize server, and
 * `demo-upstream`, a stand-in for vLLM to try the proxy against.
 *
 * Run it straight from the package:
 *
 *     deno run -A jsr:@incontext/incontext/cli serve --upstream http://127.0.0.1:8000 ...
 *
 * or install it as a command:
 *
 *     deno install -g -A -n incontext jsr:@incontext/incontext/cli
 *     incontext serve --help
 *
 * Imported, it runs nothing: {@linkcode runCli} runs one command line and
 * returns its exit code.
 *
 * @example Printing the version
 * ```ts
 * import { runCli } from "@incontext/incontext/cli";
 * import { strictEqual } from "node:assert/strict";
 *
 * strictEqual(await runCli(["version"], {}), 0);
 * ```
 *
 * @module
 */
import { runCli } from "./main.ts";

export { MAIN_HELP, runCli } from "./main.ts";

if (import.meta.main) {
  Deno.exit(await runCli(Deno.args, Deno.env.toObject()));
}
