/**
 * vLLM's tokenizer modes (`--tokenizer-mode`): which renderer and tokenizer
 * vLLM picks for a model folder, how `auto` is resolved from the folder's
 * files, and which modes the local engine renders. Read from vLLM main
 * (`vllm/config/model.py`, `vllm/tokenizers/registry.py`,
 * `vllm/transformers_utils/repo_utils.py`).
 *
 * @module
 */
import { readdir, readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import { EngineError } from "../common/errors.ts";

/** The tokenizer modes vLLM accepts, as `--tokenizer-mode` names them. */
export const TOKENIZER_MODES = [
  "auto",
  "hf",
  "slow",
  "mistral",
  "deepseek_v32",
  "deepseek_v4",
  "fastokens",
  "grok2",
  "kimi_audio",
  "qwen_vl",
] as const;

/** One of vLLM's tokenizer modes. */
export type TokenizerMode = typeof TOKENIZER_MODES[number];

/** How the local engine renders a chat: the Jinja template, a DeepSeek encoder, or none (`grok2`). */
export type RenderMode = "hf" | "deepseek_v32" | "deepseek_v4" | "grok2";

/**
 * What each mode the local engine does not render needs: vLLM tokenizes
 * (and for `mistral` renders) with code or files it does not have.
 */
const REFUSED: Readonly<Record<string, string>> = {
  slow: "tokenizes with the model's slow (Python) tokenizer",
  mistral: "renders and tokenizes with mistral_common",
  fastokens: "tokenizes with the fastokens package instead of tokenizers",
  kimi_audio: "tokenizes with Kimi-Audio's tiktoken vocabulary",
  qwen_vl: "tokenizes with Qwen-VL's tiktoken tokenizer code",
};

/** The architectures for which vLLM's `auto` picks a mode of its own (`ModelConfig`). */
const MODE_OF_ARCHITECTURE: Readonly<Record<string, TokenizerMode>> = {
  Grok1ForCausalLM: "grok2",
  MoonshotKimiaForCausalLM: "kimi_audio",
  QwenVLForConditionalGeneration: "qwen_vl",
  DeepseekV32ForCausalLM: "deepseek_v32",
  DeepseekV4ForCausalLM: "deepseek_v4",
};

/**
 * Reads a tokenizer mode as vLLM does: lower-cased, one of
 * {@linkcode TOKENIZER_MODES}.
 *
 * @param value The mode's name.
 * @returns The mode.
 * @throws {RangeError} If vLLM has no such mode.
 */
export function tokenizerMode(value: string): TokenizerMode {
  const mode = typeof value === "string" ? value.toLowerCase() : value;
  if (!(TOKENIZER_MODES as readonly unknown[]).includes(mode)) {
    throw new RangeError(
      `Cannot use the tokenizer mode as it must be one of ${
        TOKENIZER_MODES.join(", ")
      }: current value is ${JSON.stringify(value)}`,
    );
  }
  return mode as TokenizerMode;
}

/**
 * Resolves a mode as vLLM does: `auto` becomes the mode of the first
 * architecture in `config.json` (DeepSeek V3.2 and V4, Grok, Kimi-Audio,
 * Qwen-VL), then `mistral` for a folder holding both
 * `consolidated*.safetensors` and `tekken.json` or `tokenizer.model.v*`
 * (searched at any depth), else `hf`.
 *
 * @param mode The configured mode.
 * @param dir The model folder.
 * @returns The mode vLLM serves the folder in.
 * @throws {Error} If the folder cannot be read.
 *
 * @example A folder with neither
 * ```ts ignore
 * import { servedTokenizerMode } from "@incontext/engine/vllm";
 * console.log(await servedTokenizerMode("auto", "/models/Qwen3-8B")); // "hf"
 * ```
 */
export async function servedTokenizerMode(
  mode: TokenizerMode,
  dir: string,
): Promise<TokenizerMode> {
  return (await resolve(mode, dir)).mode;
}

async function resolve(
  mode: TokenizerMode,
  dir: string,
): Promise<{ mode: TokenizerMode; why: string }> {
  if (mode !== "auto") return { mode, why: "" };
  const architecture = firstArchitecture(await readConfig(dir));
  const own = MODE_OF_ARCHITECTURE[architecture ?? ""];
  if (own !== undefined) {
    return { mode: own, why: ` (auto, for ${architecture})` };
  }
  if (await hasMistralFiles(dir)) {
    return {
      mode: "mistral",
      why:
        " (auto, for a folder with consolidated*.safetensors and tekken.json or tokenizer.model.v*)",
    };
  }
  return { mode: "hf", why: "" };
}

/**
 * Resolves a mode as {@linkcode servedTokenizerMode} does and returns how
 * the local engine renders it.
 *
 * @param mode The configured mode.
 * @param dir The model folder.
 * @returns The render mode.
 * @throws {EngineError} For a mode the local engine cannot mirror, naming it
 * and the `vllm` backend to use instead.
 * @throws {Error} If the folder cannot be read.
 */
export async function resolveTokenizerMode(
  mode: TokenizerMode,
  dir: string,
): Promise<RenderMode> {
  const { mode: resolved, why } = await resolve(mode, dir);
  const refusal = REFUSED[resolved];
  if (refusal !== undefined) {
    throw new EngineError(
      `Cannot count with vLLM's tokenizer mode ${resolved}${why} locally: vLLM ${refusal}; count with the vllm backend instead`,
    );
  }
  return resolved as RenderMode;
}

async function readConfig(dir: string): Promise<string | undefined> {
  try {
    return await readFile(join(dir, "config.json"), "utf8");
  } catch (error) {
    if ((error as { code?: unknown }).code === "ENOENT") return undefined;
    throw error;
  }
}

function firstArchitecture(
  modelConfig: string | undefined,
): string | undefined {
  if (modelConfig === undefined) return undefined;
  let config: unknown;
  try {
    config = JSON.parse(modelConfig);
  } catch {
    return undefined;
  }
  const architectures = (config as { architectures?: unknown } | null)
    ?.architectures;
  const first: unknown = Array.isArray(architectures)
    ? architectures[0]
    : architectures;
  return typeof first === "string" ? first : undefined;
}

/**
 * Whether the folder holds Mistral's weights and tokenizer files, matched by
 * file name at any depth as vLLM's `any_pattern_in_repo_files` does (symbolic
 * links to files count; links to folders are not followed).
 */
async function hasMistralFiles(dir: string): Promise<boolean> {
  let weights = false;
  let tokenizer = false;
  for await (const name of fileNames(dir)) {
    if (/^consolidated.*\.safetensors$/s.test(name)) weights = true;
    if (name === "tekken.json" || name.startsWith("tokenizer.model.v")) {
      tokenizer = true;
    }
    if (weights && tokenizer) return true;
  }
  return false;
}

async function* fileNames(dir: string): AsyncGenerator<string> {
  const entries = await readdir(dir, { withFileTypes: true });
  for (const entry of entries) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* fileNames(path);
    else if (entry.isFile()) yield entry.name;
    else if (entry.isSymbolicLink() && await isFile(path)) yield entry.name;
  }
}

async function isFile(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isFile();
  } catch {
    return false;
  }
}
