/**
 * The demo upstream's command line: a few flags, and the server's bounds
 * from the same variables as `serve`'s. Every bad setting is reported in
 * one `ConfigError`.
 *
 * @module
 */
import { parseArgs } from "node:util";
import { ConfigError, type ConfigIssue } from "../../core/config_error.ts";
import { type ServerLimits, serverLimits } from "../server_limits.ts";

/** Where the demo upstream listens by default: vLLM's own default port. */
export const DEMO_LISTEN = "127.0.0.1:8000";
/** The context length it reports and enforces by default. */
export const DEMO_MAX_MODEL_LEN = 65536;
/** The model it lists by default. */
export const DEMO_MODEL = "demo-model";
/** With --tool-calls: every how many user turns a request that offers tools gets a call. */
export const DEMO_TOOL_CALL_EVERY = 3;

/** The help of `incontext demo-upstream`. */
export const DEMO_HELP: string =
  `incontext demo upstream: a stand-in for vLLM, to try the proxy without a model server

Usage:
  incontext demo-upstream [flags]

Flags:
  --listen HOST:PORT   default ${DEMO_LISTEN} (vLLM's default port)
  --max-model-len N    the context length it reports and enforces; default ${DEMO_MAX_MODEL_LEN}
  --model NAME         the model GET /v1/models lists; default ${DEMO_MODEL}
  --tool-calls         call a tool every ${DEMO_TOOL_CALL_EVERY} user turns, to try agent loops
  --help               print this help

It answers in vLLM's shapes: POST /v1/chat/completions, /v1/completions and /v1/responses
(streamed or not, with usage), POST /tokenize and /detokenize, GET /v1/models, /version and
/health. It has no model and no tokenizer: it counts one token per 4 characters of the JSON of
the messages and tools (of the prompt, for completions), the same at /tokenize and in usage; it
replies "Noted: N messages."; a prompt and max_tokens beyond --max-model-len get vLLM's 400.
With --tool-calls, a chat request that offers tools and ends with the 3rd, 6th, ... user
message of its conversation is answered with a call of its first tool, arguments {}
(finish_reason "tool_calls", streamed as vLLM streams calls); the tool's result gets text.

Environment: INCONTEXT_MAX_REQUEST_BYTES (413 above it), INCONTEXT_MAX_HEADER_BYTES (431),
INCONTEXT_HEADERS_TIMEOUT_SECONDS, INCONTEXT_REQUEST_TIMEOUT_SECONDS (408),
INCONTEXT_KEEPALIVE_TIMEOUT_SECONDS and INCONTEXT_MAX_CONNECTIONS, as for incontext serve.`;

/** What the demo upstream needs. */
export interface DemoUpstreamSettings {
  readonly hostname: string;
  readonly port: number;
  readonly maxModelLen: number;
  readonly model: string;
  /** Every how many user turns a request that offers tools gets a tool call, if at all. */
  readonly toolCallEvery: number | undefined;
  readonly limits: ServerLimits;
}

/**
 * Resolves the settings from flags and the environment, or `"help"`.
 *
 * @throws {ConfigError} Listing every bad flag and variable.
 */
export function resolveDemoUpstreamSettings(
  args: readonly string[],
  env: Record<string, string | undefined>,
): DemoUpstreamSettings | "help" {
  let values;
  try {
    ({ values } = parseArgs({
      args: [...args],
      options: {
        listen: { type: "string", default: DEMO_LISTEN },
        "max-model-len": {
          type: "string",
          default: String(DEMO_MAX_MODEL_LEN),
        },
        model: { type: "string", default: DEMO_MODEL },
        "tool-calls": { type: "boolean", default: false },
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
  const maxModelLen = Number(values["max-model-len"]);
  if (
    !/^[1-9][0-9]*$/.test(values["max-model-len"]) ||
    !Number.isSafeInteger(maxModelLen)
  ) {
    issues.push({
      variable: "--max-model-len",
      rule: "must be a positive integer",
    });
  }
  if (values.model.trim() === "") {
    issues.push({ variable: "--model", rule: "must not be blank" });
  }
  const listen = /^(.+):([0-9]{1,5})$/.exec(values.listen);
  const port = Number(listen?.[2]);
  if (listen === null || port > 65535) {
    issues.push({ variable: "--listen", rule: "must be HOST:PORT" });
  }
  const limits = serverLimits(env, issues);
  if (issues.length > 0) throw new ConfigError(issues);
  return {
    hostname: listen![1]!.replace(/^\[(.*)\]$/, "$1"),
    port,
    maxModelLen,
    model: values.model,
    toolCallEvery: values["tool-calls"] ? DEMO_TOOL_CALL_EVERY : undefined,
    limits,
  };
}
