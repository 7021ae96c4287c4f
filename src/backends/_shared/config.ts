/**
 * The settings the bundled backends read: where and how to count, the keys
 * of the hosted count endpoints, the model folder and its chat template,
 * the vLLM release mirrored, and the sizes of the count cache and of the
 * anchor store a backend builds: what a backend factory is given.
 *
 * @module
 */
import {
  broken,
  headerValue,
  httpUrl,
  integer,
  map,
  matching,
  ok,
  oneOf,
  seconds,
  text,
} from "../../_internal/setting_parsers.ts";
import type { Parse, SettingsOf } from "../../_internal/setting.ts";
import { VERSION } from "../../core/version.ts";
import {
  NEWEST_VLLM_RELEASE,
  OLDEST_VLLM_RELEASE,
  parseVllmVersion,
  TOKENIZER_MODES,
  vllmRules,
} from "@incontext/engine/vllm";

const vllmVersion: Parse<string> = (value) => {
  try {
    vllmRules(value);
    return ok(value);
  } catch {
    return broken(
      parseVllmVersion(value) === undefined
        ? "must be a vLLM version such as 0.16.0"
        : `must be ${OLDEST_VLLM_RELEASE} or newer (the oldest release mirrored)`,
    );
  }
};

const tokenizerMode: Parse<string> = (value) => {
  const mode = value.toLowerCase();
  return (TOKENIZER_MODES as readonly string[]).includes(mode)
    ? ok(mode)
    : broken(
      `must be one of vLLM's tokenizer modes: ${TOKENIZER_MODES.join(", ")}`,
    );
};

/** A JSON object, as vLLM reads `--default-chat-template-kwargs` (`json.loads`). */
const jsonObject: Parse<Readonly<Record<string, unknown>>> = (value) => {
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    return broken("must be a JSON object");
  }
  return typeof parsed === "object" && parsed !== null &&
      !Array.isArray(parsed)
    ? ok(parsed as Record<string, unknown>)
    : broken("must be a JSON object");
};

/**
 * What a backend factory is given: the bundled backends' settings, with the
 * sizes of the count cache and of the anchor store they build. The
 * configuration `loadConfig()` returns holds them all.
 */
export type BackendConfig = {
  readonly tokenizerUrl?: string;
  readonly tokenizerTimeoutSeconds: number;
  readonly tokenizerUserAgent: string;
  readonly tokenizerApiKey?: string;
  readonly anthropicApiKey?: string;
  readonly geminiApiKey?: string;
  readonly openaiApiKey?: string;
  readonly tokenizerDir?: string;
  readonly chatTemplate?: string;
  readonly chatTemplateContentFormat?: "auto" | "string" | "openai";
  readonly defaultChatTemplateKwargs?: Readonly<Record<string, unknown>>;
  readonly tokenizerSha256?: string;
  readonly vllmVersion?: string;
  readonly vllmTokenizerMode?: string;
  readonly countModel?: string;
  readonly cacheEntries: number;
  readonly anchorEntries: number;
};

/** The bundled backends' settings, by the property each one sets. */
export const BACKEND_SETTINGS: SettingsOf<BackendConfig> = {
  tokenizerUrl: {
    variable: "INCONTEXT_TOKENIZER_URL",
    alias: "HERMES_VLLM_TOKENIZER_URL",
    flag: "--tokenizer-url URL",
    doc:
      "`vllm`: the `/tokenize` URL; others: the base URL; the self-hosted ones require it",
    parse: httpUrl,
  },
  tokenizerTimeoutSeconds: {
    variable: "INCONTEXT_TOKENIZER_TIMEOUT_SECONDS",
    alias: "HERMES_VLLM_TOKENIZER_TIMEOUT_SECONDS",
    default: 30,
    doc: "how long one count may take",
    parse: seconds,
  },
  tokenizerUserAgent: {
    variable: "INCONTEXT_TOKENIZER_USER_AGENT",
    alias: "HERMES_VLLM_TOKENIZER_USER_AGENT",
    default: `incontext/${VERSION}`,
    shownDefault: "incontext/VERSION",
    doc: "the `User-Agent` of count requests",
    parse: headerValue,
  },
  tokenizerApiKey: {
    variable: "INCONTEXT_TOKENIZER_API_KEY",
    doc: "sent as a bearer token to a self-hosted count endpoint only",
    parse: headerValue,
  },
  anthropicApiKey: {
    variable: "INCONTEXT_ANTHROPIC_API_KEY",
    doc: "sent as `x-api-key` by `anthropic` only, which requires it",
    parse: headerValue,
  },
  geminiApiKey: {
    variable: "INCONTEXT_GEMINI_API_KEY",
    doc: "sent as `x-goog-api-key` by `gemini` only, which requires it",
    parse: headerValue,
  },
  openaiApiKey: {
    variable: "INCONTEXT_OPENAI_API_KEY",
    doc: "sent as a bearer token by `openai` only",
    parse: headerValue,
  },
  tokenizerDir: {
    variable: "INCONTEXT_TOKENIZER_DIR",
    doc:
      "the Hugging Face model folder the server serves; `local` and `sglang` require it",
    parse: text,
  },
  chatTemplate: {
    variable: "INCONTEXT_CHAT_TEMPLATE",
    shownDefault: "the folder's",
    doc:
      "a template file path, else the template itself when it holds `{`, `}` or a newline",
    parse: text,
  },
  chatTemplateContentFormat: {
    variable: "INCONTEXT_CHAT_TEMPLATE_CONTENT_FORMAT",
    shownDefault: "auto",
    doc:
      "`local`: `string` or `openai` (parts), as vLLM's `--chat-template-content-format`",
    parse: oneOf(
      ["auto", "string", "openai"],
      "must be auto, string or openai",
    ),
  },
  defaultChatTemplateKwargs: {
    variable: "INCONTEXT_DEFAULT_CHAT_TEMPLATE_KWARGS",
    doc:
      "`local`: vLLM's `--default-chat-template-kwargs` (a JSON object), under each request's own",
    parse: jsonObject,
  },
  tokenizerSha256: {
    variable: "INCONTEXT_TOKENIZER_SHA256",
    doc:
      "the expected SHA-256 of `tokenizer.json`; a mismatch fails every count",
    parse: map(
      matching(/^[0-9a-fA-F]{64}$/, "must be 64 hexadecimal characters"),
      (value) => value.toLowerCase(),
    ),
  },
  vllmVersion: {
    variable: "INCONTEXT_VLLM_VERSION",
    shownDefault: NEWEST_VLLM_RELEASE,
    doc:
      `the vLLM release \`local\` mirrors (${OLDEST_VLLM_RELEASE} on); unset, \`vllm\` asks \`GET /version\``,
    parse: vllmVersion,
  },
  vllmTokenizerMode: {
    variable: "INCONTEXT_VLLM_TOKENIZER_MODE",
    shownDefault: "auto",
    doc:
      "vLLM's `--tokenizer-mode`: `local` renders `hf`, `deepseek_v32`, `deepseek_v4` (others refused); `vllm` mirrors `mistral`'s tool-call ids",
    parse: tokenizerMode,
  },
  countModel: {
    variable: "INCONTEXT_COUNT_MODEL",
    doc:
      "the model `anthropic` and `gemini` count for when a request names none",
    parse: text,
  },
  cacheEntries: {
    variable: "INCONTEXT_CACHE_ENTRIES",
    default: 4096,
    doc: "how many exact counts the count cache keeps",
    parse: integer(1),
  },
  anchorEntries: {
    variable: "INCONTEXT_ANCHOR_ENTRIES",
    default: 4096,
    doc: "how many conversations' usage anchors are kept",
    parse: integer(1),
  },
};
