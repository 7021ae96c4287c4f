/**
 * Reads a Hugging Face model folder: the tokenizer files and the chat
 * template, with the SHA-256 of `tokenizer.json` to verify the revision.
 *
 * @module
 */
import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import { join } from "node:path";

/** The files of a model folder that counting needs. */
export interface ModelFolder {
  /** The text of `tokenizer.json`. */
  readonly tokenizerJson: string;
  /** The text of `tokenizer_config.json`, if the folder has one. */
  readonly tokenizerConfig?: string;
  /** The text of `chat_template.jinja`, if the folder has one. */
  readonly chatTemplate?: string;
  /** The text of `config.json` (the model's configuration), if the folder has one. */
  readonly modelConfig?: string;
  /** The SHA-256 of `tokenizer.json`'s bytes, lower-case hex. */
  readonly tokenizerSha256: string;
}

/**
 * Reads `tokenizer.json`, `tokenizer_config.json`, `chat_template.jinja` and
 * `config.json` from a model folder. Only `tokenizer.json` is required.
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
 * @throws {Error} If `tokenizer.json` cannot be read, or another file exists
 * but cannot be read.
 */
export async function readModelFolder(dir: string): Promise<ModelFolder> {
  const bytes = await readFile(join(dir, "tokenizer.json"));
  const tokenizerSha256 = createHash("sha256").update(bytes).digest("hex");
  const tokenizerJson = new TextDecoder().decode(bytes);
  const tokenizerConfig = await readOptional(
    join(dir, "tokenizer_config.json"),
  );
  const chatTemplate = await readOptional(join(dir, "chat_template.jinja"));
  const modelConfig = await readOptional(join(dir, "config.json"));
  return {
    tokenizerJson,
    tokenizerSha256,
    ...(tokenizerConfig === undefined ? {} : { tokenizerConfig }),
    ...(chatTemplate === undefined ? {} : { chatTemplate }),
    ...(modelConfig === undefined ? {} : { modelConfig }),
  };
}

async function readOptional(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, "utf8");
  } catch (error) {
    if ((error as { code?: unknown }).code === "ENOENT") return undefined;
    throw error;
  }
}
