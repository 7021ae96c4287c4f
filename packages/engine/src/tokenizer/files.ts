/**
 * Reads a Hugging Face model folder: the tokenizer files and the chat
 * template, with the SHA-256 of `tokenizer.json` (or of the vocabulary a
 * mirrored remote tokenizer reads) to verify the revision.
 *
 * @module
 */
import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import {
  readRemoteTokenizer,
  type RemoteTokenizer,
} from "./remote_tokenizer.ts";

/** The files of a model folder that counting needs. */
export interface ModelFolder {
  /** The text of `tokenizer.json`; `undefined` for a remote tokenizer. */
  readonly tokenizerJson: string | undefined;
  /** The remote tokenizer of a folder without `tokenizer.json`. */
  readonly remote?: RemoteTokenizer;
  /** The text of `tokenizer_config.json`, if the folder has one. */
  readonly tokenizerConfig?: string;
  /** The text of `chat_template.jinja`, if the folder has one. */
  readonly chatTemplate?: string;
  /** The text of `config.json` (the model's configuration), if the folder has one. */
  readonly modelConfig?: string;
  /** The SHA-256 of `tokenizer.json`'s bytes (`tiktoken.model`'s for Kimi), lower-case hex. */
  readonly tokenizerSha256: string;
}

/**
 * Reads `tokenizer.json`, `tokenizer_config.json`, `chat_template.jinja` and
 * `config.json` from a model folder. Only `tokenizer.json` is required, or
 * in its place the files of a remote tokenizer the engine mirrors.
 *
 * @example Read a folder
 * ```ts ignore
 * import { readModelFolder } from "./files.ts";
 * const folder = await readModelFolder("/models/Qwen3-8B");
 * console.log(folder.tokenizerSha256);
 * ```
 *
 * @param dir The folder's path.
 * @returns The files' text and the hash of `tokenizer.json`.
 * @throws {EngineError} For a folder without `tokenizer.json` whose
 * tokenizer the engine does not mirror, naming the file.
 * @throws {Error} If a file exists but cannot be read.
 */
export async function readModelFolder(dir: string): Promise<ModelFolder> {
  const bytes = await readOptional(join(dir, "tokenizer.json"), null);
  const tokenizerConfig = await readOptional(
    join(dir, "tokenizer_config.json"),
  );
  const chatTemplate = await readOptional(join(dir, "chat_template.jinja"));
  const modelConfig = await readOptional(join(dir, "config.json"));
  if (bytes === undefined && tokenizerConfig === undefined) {
    // No tokenizer file at all (a folder not yet there): a read error,
    // which the next count retries.
    await readFile(join(dir, "tokenizer.json"));
  }
  const remote = bytes === undefined
    ? await readRemoteTokenizer(dir, parseConfig(tokenizerConfig))
    : undefined;
  return {
    ...(bytes === undefined
      ? {
        tokenizerJson: undefined,
        remote: remote!,
        tokenizerSha256: remote!.sha256,
      }
      : {
        tokenizerJson: new TextDecoder().decode(bytes),
        tokenizerSha256: createHash("sha256").update(bytes).digest("hex"),
      }),
    ...(tokenizerConfig === undefined ? {} : { tokenizerConfig }),
    ...(chatTemplate === undefined ? {} : { chatTemplate }),
    ...(modelConfig === undefined ? {} : { modelConfig }),
  };
}

function readOptional(path: string): Promise<string | undefined>;
function readOptional(
  path: string,
  text: null,
): Promise<Uint8Array | undefined>;
async function readOptional(
  path: string,
  text?: null,
): Promise<string | Uint8Array | undefined> {
  try {
    return text === null ? await readFile(path) : await readFile(path, "utf8");
  } catch (error) {
    if ((error as { code?: unknown }).code === "ENOENT") return undefined;
    throw error;
  }
}

/** The config as transformers would read it; a malformed one names no remote class. */
function parseConfig(text: string | undefined): unknown {
  try {
    return JSON.parse(text ?? "{}");
  } catch {
    return {};
  }
}
