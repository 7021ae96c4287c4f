/**
 * A vLLM-compatible tokenize server: `POST /tokenize` and `POST /detokenize`
 * answered from a model folder, for when the inference endpoint hides its
 * own /tokenize (a hosted vLLM behind a gateway). Point the vllm backend's
 * INCONTEXT_TOKENIZER_URL at `http://HOST:PORT/tokenize`.
 *
 *     deno run --allow-net --allow-read --allow-env examples/tokenize_server.ts \
 *       --model-dir ~/models/Qwen3-8B --max-model-len 32768
 *
 * `--help` lists every flag. SIGTERM or SIGINT stop the server.
 */
import { configure, getConsoleSink } from "@logtape/logtape";
import { ConfigError, createCountCache } from "../mod.ts";
import { LocalBackend } from "../src/backends/local/mod.ts";
import {
  resolveTokenizeServerSettings,
  TOKENIZE_HELP,
} from "./_tokenize_cli.ts";
import { createTokenizeHandler } from "./_tokenize_handler.ts";

await configure({
  sinks: { console: getConsoleSink() },
  loggers: [
    { category: ["incontext"], lowestLevel: "info", sinks: ["console"] },
    {
      category: ["logtape", "meta"],
      lowestLevel: "warning",
      sinks: ["console"],
    },
  ],
});

let settings;
try {
  settings = resolveTokenizeServerSettings(Deno.args, Deno.env.toObject());
} catch (error) {
  if (!(error instanceof ConfigError)) throw error;
  console.error("incontext tokenize server: invalid configuration");
  for (const issue of error.issues) {
    console.error(`  ${issue.variable} ${issue.rule}`);
  }
  console.error("Run with --help for every flag.");
  Deno.exit(2);
}
if (settings === "help") {
  console.log(TOKENIZE_HELP);
  Deno.exit(0);
}

// The model loads, renders and tokenizes in the cache's worker: a long
// prompt never holds up this thread's other requests.
await using cache = createCountCache();
await using backend = new LocalBackend({
  dir: settings.modelDir,
  cache,
  ...(settings.chatTemplate === undefined
    ? {}
    : { chatTemplate: settings.chatTemplate }),
});
// Load the files now: a bad folder fails start-up, not the first request.
await backend.load();

const server = Deno.serve(
  {
    hostname: settings.hostname,
    port: settings.port,
    onListen: ({ hostname, port }) => {
      const host = hostname.includes(":") ? `[${hostname}]` : hostname;
      console.log(
        `incontext tokenize server listening on http://${host}:${port}: max_model_len=${settings.maxModelLen}`,
      );
    },
  },
  createTokenizeHandler({
    backend,
    maxModelLen: settings.maxModelLen,
    trustRequestChatTemplate: settings.trustRequestChatTemplate,
  }),
);
for (const signal of ["SIGTERM", "SIGINT"] as const) {
  Deno.addSignalListener(signal, () => void server.shutdown());
}
await server.finished;
