/**
 * Whether vLLM's chat endpoint builds the prompt its `/tokenize` renders.
 * For gpt-oss it does not: vLLM renders chat completions and Responses
 * requests through Harmony (`_make_request_with_harmony`, chosen by
 * `hf_config.model_type == "gpt_oss"`), while `/tokenize` renders the
 * folder's Jinja template, so the `vllm` backend, which counts what
 * `/tokenize` renders, counts another prompt. (The `local` backend renders
 * gpt-oss chats through the engine's Harmony path.)
 *
 * The engine publishes no way to ask which path a folder's chats take;
 * until it does, the model type is read here, in
 * {@linkcode servedRendering} alone, so that the engine can take the
 * question over.
 *
 * @module
 */
import { readFileSync, statSync } from "node:fs";
import { join } from "node:path";

/** The `model_type` vLLM renders through Harmony. */
const HARMONY_MODEL_TYPE = "gpt_oss";

/** The names gpt-oss is served under unless renamed: `openai/gpt-oss-20b`, `gpt-oss:120b`. */
const HARMONY_NAME = /gpt[-_]oss/i;

/** `config.json` of a model folder is a few KiB; more is not a model's configuration. */
const CONFIG_MAX_BYTES = 1024 * 1024;

/** What a folder's `config.json` says of the served model. */
export interface ServedModel {
  /** Its `model_type`, when the folder has a readable `config.json` that names one. */
  readonly modelType?: string;
}

/**
 * Reads the `model_type` of a model folder's `config.json`. A folder of
 * tokenizer files alone, or an unreadable file, says nothing.
 *
 * @param dir The model folder, or `undefined` when none is configured.
 * @returns What the folder says of the model.
 */
export function readServedModel(dir: string | undefined): ServedModel {
  if (dir === undefined) return {};
  try {
    const path = join(dir, "config.json");
    if (statSync(path).size > CONFIG_MAX_BYTES) return {};
    const parsed: unknown = JSON.parse(readFileSync(path, "utf8"));
    const modelType = (parsed as { model_type?: unknown } | null)?.model_type;
    return typeof modelType === "string" ? { modelType } : {};
  } catch {
    return {};
  }
}

/**
 * Why the chat endpoint's prompt for `model` is not the one `/tokenize`
 * renders, or `undefined` when nothing says so. The folder's `model_type`
 * decides when it is known (vLLM serves one model, the one the folder
 * describes); without it, a model name that says gpt-oss does, since a
 * count known wrong costs more than a margin that was not needed.
 *
 * @param served What the model folder says, if one is configured.
 * @param model The request's model name, if any.
 * @returns The reason, naming no request content.
 */
export function servedRendering(
  served: ServedModel,
  model: string | undefined,
): string | undefined {
  const { modelType } = served;
  if (modelType !== undefined) {
    return modelType === HARMONY_MODEL_TYPE
      ? `config.json's model_type is ${HARMONY_MODEL_TYPE}: ${HARMONY}`
      : undefined;
  }
  return model !== undefined && HARMONY_NAME.test(model)
    ? `the model's name says gpt-oss: ${HARMONY}`
    : undefined;
}

const HARMONY =
  "vLLM renders its chat prompt through Harmony, not the chat template /tokenize renders";
