/**
 * The incontext proxy server, started from the package's command line: the
 * same as `incontext serve`. Every flag and variable: `--help`.
 *
 *     npx --yes deno@2.9.6 run -A examples/server.ts --upstream http://127.0.0.1:8000
 */
import { runCli } from "../src/cli/mod.ts";

Deno.exit(await runCli(["serve", ...Deno.args], Deno.env.toObject()));
