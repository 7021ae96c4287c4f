/**
 * `incontext tokenize-server`: vLLM's `POST /tokenize` and `POST /detokenize`
 * answered from a model folder, for when the inference endpoint hides its own
 * /tokenize (a hosted vLLM behind a gateway). Point the vllm backend's
 * `INCONTEXT_TOKENIZER_URL` at `http://HOST:PORT/tokenize`.
 *
 * @module
 */
import { createCountCache } from "../cache/mod.ts";
import { LocalBackend } from "../backends/local/mod.ts";
import { configured } from "./config_failure.ts";
import { configureConsoleLog, logSettings } from "./console_log.ts";
import { createTokenizeHandler } from "./tokenize_handler.ts";
import {
  resolveTokenizeServerSettings,
  TOKENIZE_HELP,
} from "./tokenize_settings.ts";

/**
 * Runs the tokenize server until SIGTERM or SIGINT.
 *
 * @param args The command's arguments, after `tokenize-server`.
 * @param env The environment.
 * @returns The process exit code: 0 after a clean stop, 2 for a bad setting.
 */
export async function tokenizeServerCommand(
  args: readonly string[],
  env: Record<string, string | undefined>,
): Promise<number> {
  await configureConsoleLog(logSettings(env));
  const resolved = await configured(
    "incontext tokenize-server",
    () => resolveTokenizeServerSettings(args, env),
  );
  if ("exitCode" in resolved) return resolved.exitCode;
  const settings = resolved.value;
  if (settings === "help") {
    console.log(TOKENIZE_HELP);
    return 0;
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
  const signals = ["SIGTERM", "SIGINT"] as const;
  const onSignal = () => void server.shutdown();
  for (const signal of signals) Deno.addSignalListener(signal, onSignal);
  await server.finished;
  for (const signal of signals) Deno.removeSignalListener(signal, onSignal);
  return 0;
}
