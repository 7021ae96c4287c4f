/**
 * A model folder without `tokenizer.json`, whose `tokenizer_config.json`
 * names a tokenizer class of its own Python code (`auto_map.AutoTokenizer`,
 * which transformers imports with `trust_remote_code`, as vLLM loads it).
 * The engine mirrors one such module, Kimi K2's `tokenization_kimi.py`
 * over `tiktoken.model`; any other folder is refused in one line that
 * names the file and the `vllm` backend.
 *
 * @module
 */
import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { EngineError } from "../common/errors.ts";
import { type KimiClass, kimiClass } from "./kimi.ts";

/** A mirrored remote tokenizer's files. */
export interface RemoteTokenizer {
  /** What `tokenization_kimi.py` does. */
  readonly kimi: KimiClass;
  /** The text of `tiktoken.model`. */
  readonly tiktokenModel: string;
  /** The SHA-256 of `tiktoken.model`'s bytes, lower-case hex. */
  readonly sha256: string;
}

/**
 * The module `auto_map.AutoTokenizer` names (`"module.Class"`, or a list
 * whose first entry is the slow class; `"repo--module.Class"` for code of
 * another repository), or `undefined`.
 *
 * @param config The parsed `tokenizer_config.json`.
 * @returns The module's name.
 */
export function remoteModule(config: unknown): string | undefined {
  const autoMap = isRecord(config) ? config.auto_map : undefined;
  let entry = isRecord(autoMap) ? autoMap.AutoTokenizer : undefined;
  if (Array.isArray(entry)) entry = entry.find((e) => typeof e === "string");
  if (typeof entry !== "string") return undefined;
  const reference = entry.split("--").at(-1)!;
  return reference.slice(0, reference.lastIndexOf(".")) || undefined;
}

/**
 * Reads the remote tokenizer of a folder without `tokenizer.json`.
 *
 * @param dir The model folder.
 * @param config The parsed `tokenizer_config.json` (`{}` without one).
 * @returns Its files.
 * @throws {EngineError} For a folder the engine cannot count: no tokenizer
 * it reads, remote code it does not mirror, or a file missing.
 */
export async function readRemoteTokenizer(
  dir: string,
  config: unknown,
): Promise<RemoteTokenizer> {
  const module = remoteModule(config);
  if (module === undefined) {
    throw new EngineError(
      "Cannot count locally: the model folder has no tokenizer.json, nor a tokenizer class incontext mirrors; use the vllm backend",
    );
  }
  if (module !== "tokenization_kimi") {
    throw new EngineError(
      `Cannot count locally: ${module}.py is remote code incontext does not mirror; use the vllm backend`,
    );
  }
  const source = await required(dir, "tokenization_kimi.py");
  const kimi = kimiClass(new TextDecoder().decode(source));
  const bytes = await required(dir, "tiktoken.model");
  return {
    kimi,
    tiktokenModel: new TextDecoder().decode(bytes),
    sha256: createHash("sha256").update(bytes).digest("hex"),
  };
}

async function required(dir: string, name: string): Promise<Uint8Array> {
  try {
    return await readFile(join(dir, name));
  } catch (error) {
    if ((error as { code?: unknown }).code !== "ENOENT") throw error;
    throw new EngineError(
      `Cannot count locally: ${name}, which the folder's tokenizer class reads, is not in the model folder`,
    );
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
