/**
 * A vLLM-compatible tokenize server answered from a model folder, started
 * from the package's command line: the same as `incontext tokenize-server`.
 *
 *     npx --yes deno@2.9.6 run -A examples/tokenize_server.ts \
 *       --model-dir ~/models/Qwen3-8B --max-model-len 32768
 */
import { runCli } from "../src/cli/mod.ts";

Deno.exit(
  await runCli(["tokenize-server", ...Deno.args], Deno.env.toObject()),
);
