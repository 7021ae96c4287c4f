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
import { EngineError } from "../common/errors.ts";
import {
  readRemoteTokenizer,
  type RemoteTokenizer,
} from "./remote_tokenizer.ts";

/** The files of a model folder that counting needs. */
export interface ModelFolder {
  /** The text of `tokenizer.json`; `undefined` for a remote tokenizer or Grok 2's. */
  readonly tokenizerJson: string | undefined;
  /** The remote tokenizer of a folder without `tokenizer.json`. */
  readonly remote?: RemoteTokenizer;
  /** The text of `tokenizer.tok.json`, read in vLLM's tokenizer mode `grok2`. */
  readonly grok2?: string;
  /** The text of `tokenizer_config.json`, if the folder has one. */
  readonly tokenizerConfig?: string;
  /** The text of `chat_template.jinja`, if the folder has one. */
  readonly chatTemplate?: string;
  /** The text of `config.json` (the model's configuration), if the folder has one. */
  readonly modelConfig?: string;
  /** The SHA-256 of `tokenizer.json`'s bytes (`tiktoken.model`'s for Kimi, `tokenizer.tok.json`'s for Grok 2), lower-case hex. */
  readonly tokenizerSha256: string;
}

/** Options for {@linkcode readModelFolder}. */
export interface ReadFolderOptions {
  /**
   * Whether to read `tokenizer.tok.json` in place of `tokenizer.json`, as
   * vLLM's tokenizer mode `grok2` does.
   *
   * @default {false}
   */
  readonly grok2?: boolean;
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
 * @param options Which vocabulary to read.
 * @returns The files' text and the hash of `tokenizer.json`.
 * @throws {EngineError} For a folder without `tokenizer.json` whose
 * tokenizer the engine does not mirror, or without the `tokenizer.tok.json`
 * asked for, naming the file.
 * @throws {Error} If a file exists but cannot be read.
 */
export async function readModelFolder(
  dir: string,
  options: ReadFolderOptions = {},
): Promise<ModelFolder> {
  const vocabulary = options.grok2 ? "tokenizer.tok.json" : "tokenizer.json";
  const bytes = await readOptional(join(dir, vocabulary), null);
  const tokenizerConfig = await readOptional(
    join(dir, "tokenizer_config.json"),
  );
  const chatTemplate = await readOptional(join(dir, "chat_template.jinja"));
  const modelConfig = await readOptional(join(dir, "config.json"));
  if (bytes === undefined && tokenizerConfig === undefined) {
    // No tokenizer file at all (a folder not yet there): a read error,
    // which the next count retries.
    await readFile(join(dir, vocabulary));
  }
  const rest = {
    ...(tokenizerConfig === undefined ? {} : { tokenizerConfig }),
    ...(chatTemplate === undefined ? {} : { chatTemplate }),
    ...(modelConfig === undefined ? {} : { modelConfig }),
  };
  if (options.grok2) {
    if (bytes === undefined) {
      throw new EngineError(
        "Cannot count locally: tokenizer.tok.json, which vLLM's tokenizer mode grok2 reads, is not in the model folder",
      );
    }
    return {
      tokenizerJson: undefined,
      grok2: new TextDecoder().decode(bytes),
      tokenizerSha256: createHash("sha256").update(bytes).digest("hex"),
      ...rest,
    };
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
    ...rest,
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
