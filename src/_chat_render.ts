/**
 * Loads a model folder's tokenizer and chat templates and renders chat
 * requests as vLLM would before tokenizing: shared by the local backend,
 * which tokenizes the render in process, and the SGLang backend, whose
 * `/tokenize` takes text only.
 */
import type { Logger } from "@logtape/logtape";
import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import type { JsonObject, RequestKind } from "./backend.ts";
import { CountError, TemplateRejectedError } from "./errors.ts";
import { isJsonObject } from "./_request.ts";
import { responsesToChat } from "./_responses.ts";
import { errorType, safeCause } from "./_error_type.ts";
import {
  assertMirrorable,
  buildCompletionPayload,
  buildTokenizePayload,
} from "./_vllm_payload.ts";
import type { ChatTemplate } from "./_template.ts";
import type { LocalTokenizer } from "./_tokenizer.ts";
import type { SegmentCache } from "./_segments.ts";
import type { ContentFormat } from "./_local_preprocess.ts";

/** Where a model folder's files come from. */
export interface ChatFolderOptions {
  /** A Hugging Face model folder. */
  readonly dir: string;
  /** A template overriding the folder's: a path, or the text itself when it holds `{%` or `{{`. */
  readonly chatTemplate?: string;
  /** The expected SHA-256 of `tokenizer.json`; a mismatch fails the load. */
  readonly expectedSha256?: string;
  /** The clock of `strftime_now`. */
  readonly now?: () => Date;
}

/** What the first count loads. */
export interface Loaded {
  readonly tokenizer: LocalTokenizer;
  /**
   * Counts of the pieces between added tokens, for incremental counting;
   * `null` when the tokenizer does not count piece by piece exactly.
   */
  readonly segments: SegmentCache | null;
  /** Named templates (`"default"`, `"tool_use"`, ...), compiled on first use. */
  readonly sources: ReadonlyMap<string, string>;
  readonly compiled: Map<string, [ChatTemplate, ContentFormat]>;
  /** Joins the count cache key: the files' SHA-256. */
  readonly identity: string;
  /** The clock of `strftime_now`. */
  readonly now: () => Date;
  /** The template and preprocessing code, imported with the files. */
  readonly engine: Engine;
}

/**
 * The heavy modules (@huggingface/jinja, @huggingface/tokenizers), imported
 * on the first count so that importing the registry stays cheap.
 */
export type Engine =
  & typeof import("./_template.ts")
  & typeof import("./_tokenizer.ts")
  & typeof import("./_local_preprocess.ts")
  & typeof import("./_segments.ts");

async function importEngine(): Promise<Engine> {
  const [template, tokenizer, preprocess, segments] = await Promise.all([
    import("./_template.ts"),
    import("./_tokenizer.ts"),
    import("./_local_preprocess.ts"),
    import("./_segments.ts"),
  ]);
  return { ...template, ...tokenizer, ...preprocess, ...segments };
}

/**
 * The `/tokenize` body vLLM would receive: the text form for completions.
 * A request's own `chat_template` fails: the server may refuse it.
 */
export function tokenizePayload(
  request: JsonObject,
  kind: RequestKind,
): Record<string, unknown> {
  if (kind === "completion") return buildCompletionPayload(request);
  const chat = kind === "responses" ? responsesToChat(request) : request;
  assertMirrorable(chat);
  const payload = buildTokenizePayload(chat);
  if (payload.chat_template !== undefined && payload.chat_template !== null) {
    throw new CountError(
      "Cannot count a request's own chat_template locally: the server may refuse it",
    );
  }
  return payload;
}

/** Renders a chat payload after vLLM's preprocessing. */
export function renderChat(
  loaded: Loaded,
  payload: Record<string, unknown>,
  [template, contentFormat]: [ChatTemplate, ContentFormat],
): string {
  const engine = loaded.engine;
  const input = engine.templateContext(payload, {
    specialTokens: loaded.tokenizer.specialTokens,
    contentFormat,
  });
  let text: string;
  try {
    text = template.render(input.context);
  } catch (error) {
    if (error instanceof engine.TemplateRaisedError) {
      throw new TemplateRejectedError({ cause: safeCause(error) });
    }
    throw new CountError(`The chat template failed: ${errorType(error)}`, {
      cause: safeCause(error),
    });
  }
  return "continueFrom" in input
    ? engine.continueFinalMessage(text, input.continueFrom)
    : text;
}

/** Picks the template as transformers does: `tool_use` with tools, else `default`. */
export function templateFor(
  loaded: Loaded,
  tools: unknown,
): [ChatTemplate, ContentFormat] {
  const name = tools !== undefined && tools !== null &&
      loaded.sources.has("tool_use")
    ? "tool_use"
    : "default";
  const source = loaded.sources.get(name);
  if (source === undefined) {
    throw new CountError(
      "Cannot count a chat request as the model folder has no chat template",
    );
  }
  let entry = loaded.compiled.get(name);
  if (entry === undefined) {
    entry = compileTemplate(loaded, source);
    loaded.compiled.set(name, entry);
  }
  return entry;
}

export function compileTemplate(
  loaded: Loaded,
  source: string,
): [ChatTemplate, ContentFormat] {
  try {
    return [
      loaded.engine.compileChatTemplate(source, { now: loaded.now }),
      loaded.engine.detectContentFormat(source),
    ];
  } catch (error) {
    throw new CountError(
      `The chat template does not compile: ${errorType(error)}`,
    );
  }
}

export async function loadFolder(
  options: ChatFolderOptions,
  logger: Logger,
): Promise<Loaded> {
  const engine = await importEngine();
  const folder = await engine.readModelFolder(options.dir);
  const expected = options.expectedSha256?.toLowerCase();
  if (expected !== undefined && expected !== folder.tokenizerSha256) {
    throw new CountError(
      `tokenizer.json does not match the expected SHA-256: ${folder.tokenizerSha256} != ${expected}`,
    );
  }
  const tokenizer = engine.loadTokenizer({
    tokenizerJson: folder.tokenizerJson,
    ...(folder.tokenizerConfig === undefined
      ? {}
      : { tokenizerConfig: folder.tokenizerConfig }),
  });
  const sources = await templateSources(options, folder);
  const templateSha = sha256([...sources].flat().join("\0"));
  logger.info(
    "Loaded the tokenizer files: tokenizer.json sha256={tokenizerSha256}, chat template sha256={templateSha256}",
    { tokenizerSha256: folder.tokenizerSha256, templateSha256: templateSha },
  );
  const safe = engine.isSegmentationSafe(JSON.parse(folder.tokenizerJson));
  logger.info("Incremental counting: {incremental}", { incremental: safe });
  return {
    tokenizer,
    segments: safe ? new engine.SegmentCache() : null,
    sources,
    compiled: new Map(),
    identity: `${folder.tokenizerSha256} ${templateSha}`,
    now: options.now ?? (() => new Date()),
    engine,
  };
}

async function templateSources(
  options: ChatFolderOptions,
  folder: { tokenizerConfig?: string; chatTemplate?: string },
): Promise<Map<string, string>> {
  const explicit = options.chatTemplate;
  if (explicit !== undefined) {
    const text = explicit.includes("{%") || explicit.includes("{{")
      ? explicit
      : await readFile(explicit, "utf8");
    return new Map([["default", text]]);
  }
  if (folder.chatTemplate !== undefined) {
    return new Map([["default", folder.chatTemplate]]);
  }
  const config: unknown = JSON.parse(folder.tokenizerConfig ?? "{}");
  const template = isJsonObject(config) ? config.chat_template : undefined;
  if (typeof template === "string") return new Map([["default", template]]);
  const named = new Map<string, string>();
  if (Array.isArray(template)) {
    for (const entry of template) {
      if (
        isJsonObject(entry) && typeof entry.name === "string" &&
        typeof entry.template === "string"
      ) named.set(entry.name, entry.template);
    }
  }
  return named;
}

function sha256(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}
