/**
 * A model folder's chat templates, found as vLLM and transformers find
 * them: an explicit template read as vLLM's `load_chat_template` reads it,
 * the tokenizer's template files or `tokenizer_config.json`'s, and a
 * multimodal processor's `chat_template.json`.
 *
 * @module
 */
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { EngineError, errorType } from "../common/errors.ts";
import { isJsonObject } from "../common/request.ts";

/** The key of the processor's template (`chat_template.json`) in `Loaded.sources`. */
export const PROCESSOR = "\0processor";

/**
 * The templates as vLLM and transformers find them: an explicit template
 * (vLLM's `--chat-template`, read by `load_chat_template`) alone; else the
 * tokenizer's, from `chat_template.jinja` and `additional_chat_templates/`,
 * which replace `tokenizer_config.json`'s `chat_template` (a text, or a list
 * of named ones); and the processor's `chat_template.json` of a folder
 * with `preprocessor_config.json` or `processor_config.json`.
 */
export async function templateSources(
  options: { readonly dir: string; readonly chatTemplate?: string },
  folder: { tokenizerConfig?: string; chatTemplate?: string },
): Promise<{ sources: Map<string, string>; named: boolean }> {
  const explicit = options.chatTemplate;
  if (explicit !== undefined) {
    return {
      sources: new Map([["default", await loadChatTemplate(explicit)]]),
      named: false,
    };
  }
  const dir = options.dir;
  const files = new Map<string, string>();
  if (folder.chatTemplate !== undefined) {
    files.set("default", folder.chatTemplate);
  }
  for (const name of await jinjaFiles(join(dir, "additional_chat_templates"))) {
    files.set(
      name.slice(0, -".jinja".length),
      await readFile(join(dir, "additional_chat_templates", name), "utf8"),
    );
  }
  let sources = files;
  let named = files.size > 1 || (files.size === 1 && !files.has("default"));
  if (files.size === 0) {
    const config: unknown = JSON.parse(folder.tokenizerConfig ?? "{}");
    const template = isJsonObject(config) ? config.chat_template : undefined;
    sources = new Map();
    if (typeof template === "string") sources.set("default", template);
    else if (Array.isArray(template)) {
      named = true;
      for (const entry of template) {
        if (
          isJsonObject(entry) && typeof entry.name === "string" &&
          typeof entry.template === "string"
        ) sources.set(entry.name, entry.template);
      }
    }
  }
  const processor = await processorTemplate(dir);
  if (processor !== undefined) sources.set(PROCESSOR, processor);
  return { sources, named };
}

/**
 * vLLM's `load_chat_template`: the file's text; else, for a value holding
 * `{`, `}` or a newline, the value itself.
 */
async function loadChatTemplate(value: string): Promise<string> {
  try {
    return await readFile(value, "utf8");
  } catch (error) {
    if (/[{}\n]/.test(value)) return value;
    throw new EngineError(
      `The chat template is neither a readable file nor a template: ${
        errorType(error)
      }`,
    );
  }
}

/** The `.jinja` files of a folder, sorted; none when it does not exist. */
async function jinjaFiles(path: string): Promise<string[]> {
  try {
    return (await readdir(path)).filter((name) => name.endsWith(".jinja"))
      .sort();
  } catch (error) {
    if ((error as { code?: unknown }).code === "ENOENT") return [];
    throw error;
  }
}

/**
 * The processor's template: `chat_template.json`'s `chat_template`, in a
 * folder whose preprocessor files make AutoProcessor load a processor.
 */
async function processorTemplate(dir: string): Promise<string | undefined> {
  const [json, ...configs] = await Promise.all(
    [
      "chat_template.json",
      "preprocessor_config.json",
      "processor_config.json",
    ].map((name) => readOptional(join(dir, name))),
  );
  if (json === undefined || configs.every((text) => text === undefined)) {
    return undefined;
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(json);
  } catch {
    return undefined;
  }
  const template = isJsonObject(parsed) ? parsed.chat_template : undefined;
  return typeof template === "string" ? template : undefined;
}

async function readOptional(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, "utf8");
  } catch (error) {
    if ((error as { code?: unknown }).code === "ENOENT") return undefined;
    throw error;
  }
}
