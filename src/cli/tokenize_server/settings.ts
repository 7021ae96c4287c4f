/**
 * The tokenize server's command line: flags override the environment;
 * every bad setting is reported in one `ConfigError`.
 *
 * @module
 */
import { parseArgs } from "node:util";
import { ConfigError, type ConfigIssue } from "../../core/config_error.ts";
import { TOKENIZER_MODES, tokenizerMode } from "@incontext/engine/vllm";
import { type ServerLimits, serverLimits } from "../server_limits.ts";
import { BACKEND_SETTINGS } from "../../backends/_shared/config.ts";

export const TOKENIZE_HELP =
  `incontext tokenize server: vLLM's /tokenize and /detokenize from a model folder

Usage:
  incontext tokenize-server --model-dir PATH --max-model-len N [flags]

Flags:
  --model-dir PATH                Hugging Face model folder (tokenizer.json, tokenizer_config.json,
                                  chat_template.jinja); default INCONTEXT_TOKENIZER_DIR
  --max-model-len N               the served context length every answer reports (required)
  --listen HOST:PORT              default 127.0.0.1:8001
  --chat-template PATH            a chat template overriding the folder's, as vLLM's --chat-template
  --default-chat-template-kwargs JSON
                                  vLLM's flag: a JSON object under each request's chat_template_kwargs;
                                  default INCONTEXT_DEFAULT_CHAT_TEMPLATE_KWARGS
  --tokenizer-mode MODE           vLLM's --tokenizer-mode: auto (default), hf, deepseek_v32,
                                  deepseek_v4 or grok2 (prompts only; the others are refused); default
                                  INCONTEXT_VLLM_TOKENIZER_MODE
  --trust-request-chat-template   use a request's own chat_template (refused with HTTP 400 otherwise)
  --help                          print this help

Environment: INCONTEXT_MAX_REQUEST_BYTES (413 above it), INCONTEXT_MAX_HEADER_BYTES (431),
INCONTEXT_HEADERS_TIMEOUT_SECONDS, INCONTEXT_REQUEST_TIMEOUT_SECONDS (408),
INCONTEXT_KEEPALIVE_TIMEOUT_SECONDS and INCONTEXT_MAX_CONNECTIONS, as for incontext serve.

Endpoints: POST /tokenize (chat form: messages, tools, add_generation_prompt, continue_final_message,
add_special_tokens, chat_template_kwargs, return_token_strs; text form: prompt, add_special_tokens),
POST /detokenize {tokens}.`;

/** What the tokenize server needs. */
export interface TokenizeServerSettings {
  readonly modelDir: string;
  readonly maxModelLen: number;
  readonly hostname: string;
  readonly port: number;
  readonly chatTemplate?: string;
  /** vLLM's `--default-chat-template-kwargs`. */
  readonly defaultChatTemplateKwargs?: Readonly<Record<string, unknown>>;
  /** vLLM's tokenizer mode, lower-cased. */
  readonly tokenizerMode: string;
  readonly trustRequestChatTemplate: boolean;
  readonly limits: ServerLimits;
}

/**
 * Resolves the settings from flags and the environment, or `"help"`.
 *
 * @throws {ConfigError} Listing every bad or missing flag.
 */
export function resolveTokenizeServerSettings(
  args: readonly string[],
  env: Record<string, string | undefined>,
): TokenizeServerSettings | "help" {
  let values;
  try {
    ({ values } = parseArgs({
      args: [...args],
      options: {
        "model-dir": { type: "string" },
        "max-model-len": { type: "string" },
        listen: { type: "string", default: "127.0.0.1:8001" },
        "chat-template": { type: "string" },
        "default-chat-template-kwargs": { type: "string" },
        "tokenizer-mode": { type: "string" },
        "trust-request-chat-template": { type: "boolean", default: false },
        help: { type: "boolean", default: false },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (error) {
    const rule = error instanceof Error
      ? error.message.split("\n")[0]!
      : "invalid";
    throw new ConfigError([{ variable: "command line", rule }]);
  }
  if (values.help) return "help";
  const issues: ConfigIssue[] = [];
  const modelDir = values["model-dir"] ?? env.INCONTEXT_TOKENIZER_DIR;
  if (modelDir === undefined || modelDir === "") {
    issues.push({
      variable: "--model-dir (INCONTEXT_TOKENIZER_DIR)",
      rule: "is required",
    });
  }
  const maxModelLen = Number(values["max-model-len"]);
  if (!/^[1-9][0-9]*$/.test(values["max-model-len"] ?? "")) {
    issues.push({
      variable: "--max-model-len",
      rule: "is required and must be a positive integer",
    });
  }
  const listen = /^(.+):([0-9]{1,5})$/.exec(values.listen);
  const port = Number(listen?.[2]);
  if (listen === null || port > 65535) {
    issues.push({ variable: "--listen", rule: "must be HOST:PORT" });
  }
  const limits = serverLimits(env, issues);
  const mode = values["tokenizer-mode"] ??
    env.INCONTEXT_VLLM_TOKENIZER_MODE ?? "auto";
  try {
    tokenizerMode(mode);
  } catch {
    issues.push({
      variable: "--tokenizer-mode (INCONTEXT_VLLM_TOKENIZER_MODE)",
      rule: `must be one of vLLM's tokenizer modes: ${
        TOKENIZER_MODES.join(", ")
      }`,
    });
  }
  const kwargsText = values["default-chat-template-kwargs"] ??
    env.INCONTEXT_DEFAULT_CHAT_TEMPLATE_KWARGS;
  const kwargs = kwargsText === undefined
    ? undefined
    : BACKEND_SETTINGS.defaultChatTemplateKwargs.parse(kwargsText.trim());
  for (const rule of kwargs?.rules ?? []) {
    issues.push({
      variable:
        "--default-chat-template-kwargs (INCONTEXT_DEFAULT_CHAT_TEMPLATE_KWARGS)",
      rule,
    });
  }
  if (issues.length > 0) throw new ConfigError(issues);
  const chatTemplate = values["chat-template"];
  return {
    modelDir: modelDir!,
    maxModelLen,
    hostname: listen![1]!.replace(/^\[(.*)\]$/, "$1"),
    port,
    ...(chatTemplate === undefined ? {} : { chatTemplate }),
    ...(kwargs?.value === undefined
      ? {}
      : { defaultChatTemplateKwargs: kwargs.value }),
    tokenizerMode: tokenizerMode(mode),
    trustRequestChatTemplate: values["trust-request-chat-template"],
    limits,
  };
}
