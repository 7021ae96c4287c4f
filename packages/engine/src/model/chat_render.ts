/**
 * Loads a model folder's tokenizer and chat templates and renders chat
 * requests as vLLM would before tokenizing: shared by the local backend,
 * which tokenizes the render in process, and the SGLang backend, whose
 * `/tokenize` takes text only.
 */
import type { Logger } from "@logtape/logtape";
import { createHash } from "node:crypto";
import {
  EngineError,
  RequestRejectedError,
  UnsupportedConstructError,
} from "../common/errors.ts";
import { isJsonObject } from "../common/request.ts";
import { errorType, safeCause } from "../common/errors.ts";
import type { ChatTemplate } from "../jinja/chat_template.ts";
import type { LocalTokenizer } from "../tokenizer/tokenizer.ts";
import type {
  ContentFormat,
  ContextOptions,
  Reuse,
} from "../vllm/preprocess.ts";
import { type VllmRules, vllmRules } from "../vllm/release.ts";
import type { RenderedChat } from "../deepseek/render.ts";
import {
  type RenderMode,
  resolveTokenizerMode,
  tokenizerMode,
} from "../vllm/tokenizer_mode.ts";

/** Where a model folder's files come from. */
export interface ChatFolderOptions {
  /** A Hugging Face model folder. */
  readonly dir: string;
  /** A template overriding the folder's: a path, else the text itself when it holds `{`, `}` or a newline. */
  readonly chatTemplate?: string;
  /** The expected SHA-256 of `tokenizer.json`; a mismatch fails the load. */
  readonly expectedSha256?: string;
  /** The clock of `strftime_now`. */
  readonly now?: () => Date;
  /** The vLLM release whose preprocessing is mirrored (the newest known by default). */
  readonly vllmVersion?: string;
  /**
   * vLLM's tokenizer mode (`--tokenizer-mode`, one of `TOKENIZER_MODES`);
   * `undefined` renders the Jinja template, as a server without tokenizer
   * modes does.
   */
  readonly tokenizerMode?: string;
  /** How templates read `message.content`, as vLLM's `--chat-template-content-format` (`auto` by default). */
  readonly chatTemplateContentFormat?: ContentFormatOption;
  /**
   * vLLM's `--default-chat-template-kwargs`: merged under each request's
   * `chat_template_kwargs` as vLLM merges them (none by default).
   */
  readonly defaultChatTemplateKwargs?: Readonly<Record<string, unknown>>;
}

/** vLLM's `--chat-template-content-format`: detected (`auto`), or given. */
export type ContentFormatOption = "auto" | ContentFormat;

const CONTENT_FORMATS: readonly ContentFormatOption[] = [
  "auto",
  "string",
  "openai",
];

/** Only the folder fields of a backend's options: what crosses to the count worker. */
export function folderSpec(options: ChatFolderOptions): ChatFolderOptions {
  const { dir, chatTemplate, expectedSha256, now, vllmVersion } = options;
  const mode = options.tokenizerMode;
  const format = options.chatTemplateContentFormat;
  const kwargs = options.defaultChatTemplateKwargs;
  return {
    dir,
    ...(kwargs === undefined ? {} : { defaultChatTemplateKwargs: kwargs }),
    ...(format === undefined || format === "auto"
      ? {}
      : { chatTemplateContentFormat: format }),
    ...(chatTemplate === undefined ? {} : { chatTemplate }),
    ...(expectedSha256 === undefined ? {} : { expectedSha256 }),
    ...(now === undefined ? {} : { now }),
    ...(vllmVersion === undefined ? {} : { vllmVersion }),
    ...(mode === undefined ? {} : { tokenizerMode: tokenizerMode(mode) }),
  };
}

/** The SHA-256 (lower-case hex) of the files a model folder loaded. */
export interface FilesSha256 {
  /** Of `tokenizer.json`'s bytes. */
  readonly tokenizer: string;
  /** Of `tokenizer_config.json`'s text, or `null` when the folder has none. */
  readonly tokenizerConfig: string | null;
  /** Of the chat template sources (named templates joined), as used. */
  readonly template: string;
}

/** The files' SHA-256 in one string: joins cache keys, so another template counts apart. */
export function filesIdentity(files: FilesSha256): string {
  return `${files.tokenizer} ${files.tokenizerConfig} ${files.template}`;
}

/** What the first count loads. */
export interface Loaded {
  readonly tokenizer: LocalTokenizer;
  /**
   * Whether the pieces between added tokens count independently, so that
   * counting them one by one (incrementally) is exact.
   */
  readonly incremental: boolean;
  /** Whether pieces may be cut further into line chunks (`isLineChunkSafe`). */
  readonly lineChunks: boolean;
  /** The files' SHA-256. */
  readonly files: FilesSha256;
  /**
   * The tokenizer's templates by name (`"default"`, `"tool_use"`, ...),
   * compiled on first use; under `PROCESSOR` (template_files.ts), the processor's.
   */
  readonly sources: ReadonlyMap<string, string>;
  /** Whether the tokenizer's templates are named (a dict in transformers), so a request may pick one by name. */
  readonly named: boolean;
  readonly compiled: Map<string, [ChatTemplate, ContentFormat]>;
  /** Joins the count cache keys: the files' SHA-256 and the vLLM release mirrored. */
  readonly identity: string;
  /** The preprocessing rules of the vLLM release mirrored. */
  readonly rules: VllmRules;
  /** How chats render: the Jinja template, or vLLM's DeepSeek encoders. */
  readonly mode: RenderMode;
  /**
   * Whether `config.json`'s `model_type` is `gpt_oss`: vLLM's chat path
   * renders such a model's chats through Harmony, its `/tokenize` through
   * the template.
   */
  readonly harmony: boolean;
  /**
   * Whether the tool schemas' keys are sorted before the template runs, as
   * the folder's remote tokenizer class (Kimi's `deep_sort_dict`) does.
   */
  readonly sortsTools: boolean;
  /** The clock of `strftime_now`. */
  readonly now: () => Date;
  /** The content format given, or `auto` to detect each template's. */
  readonly contentFormat: ContentFormatOption;
  /** The server's `--default-chat-template-kwargs`. */
  readonly defaultKwargs: Readonly<Record<string, unknown>>;
  /** The template and preprocessing code, imported with the files. */
  readonly engine: RenderModules;
}

/**
 * The heavy modules (@huggingface/jinja, @huggingface/tokenizers), imported
 * on the first count so that importing the registry stays cheap.
 */
export type RenderModules =
  & typeof import("../jinja/chat_template.ts")
  & typeof import("../tokenizer/tokenizer.ts")
  & typeof import("../tokenizer/rebuilt.ts")
  & typeof import("../vllm/preprocess.ts")
  & typeof import("../deepseek/render.ts")
  & typeof import("../harmony/render.ts")
  & typeof import("../harmony/responses.ts")
  & typeof import("./harmony_count.ts")
  & typeof import("./segments.ts")
  & typeof import("./line_chunks.ts")
  & typeof import("./tool_sort.ts")
  & typeof import("./template_files.ts")
  & typeof import("../vllm/template_kwargs.ts");

async function importRenderModules(): Promise<RenderModules> {
  const [
    template,
    tokenizer,
    rebuilt,
    preprocess,
    deepseek,
    harmony,
    responses,
    harmonyCount,
    segments,
    lines,
    toolSort,
    files,
    kwargs,
  ] = await Promise.all([
    import("../jinja/chat_template.ts"),
    import("../tokenizer/tokenizer.ts"),
    import("../tokenizer/rebuilt.ts"),
    import("../vllm/preprocess.ts"),
    import("../deepseek/render.ts"),
    import("../harmony/render.ts"),
    import("../harmony/responses.ts"),
    import("./harmony_count.ts"),
    import("./segments.ts"),
    import("./line_chunks.ts"),
    import("./tool_sort.ts"),
    import("./template_files.ts"),
    import("../vllm/template_kwargs.ts"),
  ]);
  return {
    ...template,
    ...tokenizer,
    ...rebuilt,
    ...preprocess,
    ...deepseek,
    ...harmony,
    ...responses,
    ...harmonyCount,
    ...segments,
    ...lines,
    ...toolSort,
    ...files,
    ...kwargs,
  };
}

/** A template's converted messages and tools, by the payload object they came from. */
interface Converted {
  readonly message: WeakMap<object, unknown>;
  readonly tool: WeakMap<object, unknown>;
  /** The last few renders' messages and their values, in order, newest first. */
  recent: RenderedMessages[];
}

/** A render's messages (the payload's objects) and their template values. */
interface RenderedMessages {
  readonly messages: readonly unknown[];
  readonly values: readonly unknown[];
}

/** Renders whose messages are remembered in order: a few conversations interleaved. */
const RECENT_RENDERS = 4;

const convertedByTemplate = new WeakMap<object, Converted>();

/**
 * Remembers each message and tool object's template value, per template
 * (the content format differs): a grown conversation converts only its new
 * messages. Template values are never changed by a render (only namespace
 * attributes can be assigned), so they are shared across renders. The
 * messages a recent render held first, in the same order, are taken with
 * their values at once, without looking each up (a lookup reads the
 * message object, at a million tokens most often out of the processor's
 * caches).
 */
function reuseFor(
  loaded: Loaded,
  entry: [ChatTemplate, ContentFormat],
): Pick<ContextOptions, "reuse" | "reuseMessages"> {
  let converted = convertedByTemplate.get(entry);
  if (converted === undefined) {
    converted = { message: new WeakMap(), tool: new WeakMap(), recent: [] };
    convertedByTemplate.set(entry, converted);
  }
  const memo = converted;
  const convert = preTemplate(loaded);
  const reuse: Reuse = (kind, raw, make) => {
    if (typeof raw !== "object" || raw === null) {
      return convert(kind, raw, make);
    }
    let value = memo[kind].get(raw);
    if (value === undefined) {
      value = loaded.engine.toValue(convert(kind, raw, make));
      memo[kind].set(raw, value);
    }
    return value;
  };
  const reuseMessages = (
    raw: readonly unknown[],
    each: (message: unknown) => unknown,
  ): unknown => {
    let before: RenderedMessages | undefined;
    let shared = 0;
    for (const render of memo.recent) {
      const n = Math.min(render.messages.length, raw.length);
      let i = 0;
      // `Object.is` tells the same object without reading it, as `===` would.
      while (i < n && Object.is(render.messages[i], raw[i])) i++;
      if (i > shared) {
        shared = i;
        before = render;
      }
    }
    const values = before?.values.slice(0, shared) ?? [];
    for (let i = shared; i < raw.length; i++) values.push(each(raw[i]));
    // A render this one holds whole is remembered no more.
    const held = shared === before?.messages.length ? before : undefined;
    memo.recent = [
      { messages: raw, values },
      ...memo.recent.filter((render) => render !== held),
    ].slice(0, RECENT_RENDERS);
    // The template's own list: what it does to it stays in this render.
    return loaded.engine.listValue(values.slice());
  };
  return { reuse, reuseMessages };
}

/**
 * The steps the folder's tokenizer class runs on the tools before its
 * template (Kimi's `deep_sort_dict`), after vLLM's preprocessing.
 */
function preTemplate(loaded: Loaded): Reuse {
  return (kind, _raw, make) =>
    kind === "tool" && loaded.sortsTools
      ? loaded.engine.deepSortDict(make())
      : make();
}

/** Options for {@linkcode renderChat}. */
export interface RenderChatOptions {
  /** The compiled template and its content format ({@linkcode templateFor}, {@linkcode compileTemplate}). */
  readonly template: [ChatTemplate, ContentFormat];
  /**
   * Whether message and tool objects seen in an earlier render keep their
   * converted values: only for payloads nobody changes between renders (the
   * count core's own copies), never a caller's objects.
   *
   * @default {false}
   */
  readonly reuse?: boolean;
}

/** Options for {@linkcode renderChatParts}. */
export interface RenderChatPartsOptions extends RenderChatOptions {
  /**
   * Whether the text comes in parts; `false` gives it in one part.
   *
   * @default {true}
   */
  readonly split?: boolean;
}

/** Renders a chat payload after vLLM's preprocessing. */
export function renderChat(
  loaded: Loaded,
  payload: Record<string, unknown>,
  options: RenderChatOptions,
): string {
  return renderChatParts(loaded, payload, { ...options, split: false })[0]!;
}

/**
 * {@linkcode renderChat}, the text in parts (see `ChatTemplate.renderParts`),
 * or in one part when `options.split` is false.
 */
export function renderChatParts(
  loaded: Loaded,
  payload: Record<string, unknown>,
  options: RenderChatPartsOptions,
): string[] {
  const { template: entry, reuse = false, split = true } = options;
  const [template, contentFormat] = entry;
  const engine = loaded.engine;
  const input = engine.templateContext(payload, {
    specialTokens: loaded.tokenizer.specialTokens,
    contentFormat,
    rules: loaded.rules,
    ...(reuse
      ? reuseFor(loaded, entry)
      : loaded.sortsTools
      ? { reuse: preTemplate(loaded) }
      : {}),
  });
  // Converted values kept between renders let loops reuse item outputs.
  const memo = { memo: reuse };
  let parts: string[];
  try {
    parts = split && !("continueFrom" in input)
      ? template.renderParts(input.context, memo)
      : [template.render(input.context, memo)];
  } catch (error) {
    // What jinja2 raises, vLLM answers with a 400: so does the proxy.
    if (error instanceof engine.TemplateRaisedError) {
      throw new RequestRejectedError({ cause: safeCause(error) });
    }
    if (error instanceof engine.TemplateUnsupportedError) {
      throw new UnsupportedConstructError(error.construct);
    }
    throw new EngineError(`The chat template failed: ${errorType(error)}`, {
      cause: safeCause(error),
    });
  }
  return "continueFrom" in input
    ? [engine.continueFinalMessage(parts[0]!, input.continueFrom)]
    : parts;
}

/** Options for {@linkcode renderPayload}. */
export interface RenderPayloadOptions {
  /**
   * Whether message and tool objects keep their converted values (see
   * {@linkcode RenderChatOptions.reuse}).
   *
   * @default {false}
   */
  readonly reuse?: boolean;
  /**
   * Whether the prompt comes in parts; `false` gives it in one part.
   *
   * @default {true}
   */
  readonly split?: boolean;
  /**
   * A chat template of the request's own (a `/tokenize` body's
   * `chat_template`), rendered instead of the folder's; the DeepSeek
   * encoders read no template.
   *
   * @default {undefined} the folder's
   */
  readonly ownTemplate?: string;
}

/**
 * Renders a chat payload as the served renderer does, its
 * `chat_template_kwargs` merged over the server's defaults: the chat template
 * after vLLM's preprocessing, or vLLM's DeepSeek encoder in those tokenizer
 * modes; with whether the tokenizer adds special tokens to the prompt.
 * Refused in the mode `grok2`, whose chats vLLM fails.
 */
export function renderPayload(
  loaded: Loaded,
  payload: Record<string, unknown>,
  options: RenderPayloadOptions = {},
): RenderedChat {
  const { reuse = false, split = true, ownTemplate } = options;
  if (loaded.mode === "grok2") throw new EngineError(loaded.engine.GROK2_CHAT);
  payload = loaded.engine.withDefaultKwargs(payload, loaded.defaultKwargs);
  if (loaded.mode !== "hf") {
    return loaded.engine.renderDeepseek(loaded.mode, payload, {
      rules: loaded.rules,
      split,
    });
  }
  // transformers' get_chat_template: a request's template may name one of
  // the tokenizer's named templates.
  const template = ownTemplate === undefined
    ? templateFor(loaded, payload.tools)
    : loaded.named && loaded.sources.has(ownTemplate) &&
        ownTemplate !== loaded.engine.PROCESSOR
    ? namedTemplate(loaded, ownTemplate)
    : compileTemplate(loaded, ownTemplate);
  return {
    parts: renderChatParts(loaded, payload, { template, reuse, split }),
    addSpecialTokens: payload.add_special_tokens === true,
  };
}

/**
 * Picks the template as vLLM's `resolve_chat_template` does: without tools,
 * the processor's (`chat_template.json` of a multimodal folder); then the
 * tokenizer's as transformers' `get_chat_template` picks it: `tool_use` with
 * tools, else `default`.
 */
export function templateFor(
  loaded: Loaded,
  tools: unknown,
): [ChatTemplate, ContentFormat] {
  const given = tools !== undefined && tools !== null;
  const name = !given && loaded.sources.has(loaded.engine.PROCESSOR)
    ? loaded.engine.PROCESSOR
    : given && loaded.sources.has("tool_use")
    ? "tool_use"
    : "default";
  return namedTemplate(loaded, name);
}

function namedTemplate(
  loaded: Loaded,
  name: string,
): [ChatTemplate, ContentFormat] {
  const source = loaded.sources.get(name);
  if (source === undefined) {
    throw new EngineError(
      loaded.sources.size > 0
        ? "Cannot count a chat request as the model folder's named chat templates have no default"
        : "Cannot count a chat request as the model folder has no chat template",
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
      loaded.contentFormat === "auto"
        ? loaded.engine.detectContentFormat(source)
        : loaded.contentFormat,
    ];
  } catch (error) {
    throw new EngineError(
      `The chat template does not compile: ${errorType(error)}`,
    );
  }
}

/**
 * Throws a TypeError naming `what` when a model folder's options are
 * invalid, a RangeError when its `vllmVersion` is not a release mirrored or
 * its `tokenizerMode` not one of vLLM's.
 */
export function checkFolderOptions(
  what: string,
  options: ChatFolderOptions,
): void {
  if (typeof options?.dir !== "string" || options.dir === "") {
    throw new TypeError(
      `Cannot create ${what} as 'dir' must be a non-empty string`,
    );
  }
  const sha = options.expectedSha256;
  if (sha !== undefined && !/^[0-9a-fA-F]{64}$/.test(sha)) {
    throw new TypeError(
      `Cannot create ${what} as 'expectedSha256' must be 64 hex characters`,
    );
  }
  if (options.vllmVersion !== undefined) vllmRules(options.vllmVersion);
  if (options.tokenizerMode !== undefined) tokenizerMode(options.tokenizerMode);
  const kwargs = options.defaultChatTemplateKwargs;
  if (kwargs !== undefined && !isJsonObject(kwargs)) {
    throw new TypeError(
      `Cannot create ${what} as 'defaultChatTemplateKwargs' must be an object`,
    );
  }
  const format = options.chatTemplateContentFormat;
  if (format !== undefined && !CONTENT_FORMATS.includes(format)) {
    throw new TypeError(
      `Cannot create ${what} as 'chatTemplateContentFormat' must be auto, string or openai: current value is ${
        JSON.stringify(format)
      }`,
    );
  }
}

/** Reads and builds a model folder's tokenizer and templates. */
export async function loadFolder(
  options: ChatFolderOptions,
  logger: Logger,
): Promise<Loaded> {
  const rules = vllmRules(options.vllmVersion);
  // First: a refused mode's folder may lack tokenizer.json.
  const mode = options.tokenizerMode === undefined
    ? "hf"
    : await resolveTokenizerMode(
      tokenizerMode(options.tokenizerMode),
      options.dir,
    );
  const engine = await importRenderModules();
  const folder = await engine.readModelFolder(options.dir, {
    grok2: mode === "grok2",
  });
  const expected = options.expectedSha256?.toLowerCase();
  if (expected !== undefined && expected !== folder.tokenizerSha256) {
    throw new EngineError(
      `tokenizer.json does not match the expected SHA-256: ${folder.tokenizerSha256} != ${expected}`,
    );
  }
  const { tokenizer, incremental, lineChunks } = folderTokenizer(
    engine,
    folder,
    mode,
  );
  const sortsTools = folder.remote?.kimi.sortsTools === true;
  const { sources, named } = await engine.templateSources(options, folder);
  const files: FilesSha256 = {
    tokenizer: folder.tokenizerSha256,
    tokenizerConfig: folder.tokenizerConfig === undefined
      ? null
      : sha256(folder.tokenizerConfig),
    template: sha256([...sources].flat().join("\0")),
  };
  logger.info(
    "Loaded the tokenizer files: tokenizer.json sha256={tokenizerSha256}, tokenizer_config.json sha256={tokenizerConfigSha256}, chat template sha256={templateSha256}; renderer: {mode}; incremental counting: {incremental}, line chunks: {lineChunks}",
    {
      mode,
      tokenizerSha256: files.tokenizer,
      tokenizerConfigSha256: files.tokenizerConfig,
      templateSha256: files.template,
      incremental,
      lineChunks,
    },
  );
  const contentFormat = options.chatTemplateContentFormat ?? "auto";
  const harmony = modelType(folder.modelConfig) === "gpt_oss";
  const defaultKwargs = options.defaultChatTemplateKwargs ?? {};
  const kwargsText = JSON.stringify(defaultKwargs);
  return {
    tokenizer,
    incremental,
    lineChunks,
    files,
    sources,
    named,
    compiled: new Map(),
    identity: `${filesIdentity(files)} vllm-${rules.release}${
      mode === "hf" ? "" : ` ${mode}`
    }${contentFormat === "auto" ? "" : ` content-${contentFormat}`}${
      harmony ? " harmony" : ""
    }${sortsTools ? " sorted-tools" : ""}${
      kwargsText === "{}" ? "" : ` kwargs-${kwargsText}`
    }`,
    rules,
    mode,
    harmony,
    sortsTools,
    now: options.now ?? (() => new Date()),
    contentFormat,
    defaultKwargs,
    engine,
  };
}

/**
 * The folder's tokenizer: tokenizer.json's, or the remote tokenizer class
 * the engine mirrors (Kimi's tiktoken vocabulary, whose stretches between
 * added tokens count on their own, as its slow-tokenizer path encodes
 * them; line chunks are left out, as its 400,000-character cuts count
 * from each stretch's start), or Grok 2's, which counts no chat.
 */
function folderTokenizer(
  engine: RenderModules,
  folder: Awaited<ReturnType<RenderModules["readModelFolder"]>>,
  mode: RenderMode,
): Pick<Loaded, "tokenizer" | "incremental" | "lineChunks"> {
  const tokenizerConfig = folder.tokenizerConfig ?? "{}";
  if (folder.grok2 !== undefined) {
    return {
      tokenizer: engine.grok2Tokenizer(folder.grok2),
      incremental: false,
      lineChunks: false,
    };
  }
  if (folder.tokenizerJson === undefined) {
    const config: unknown = JSON.parse(tokenizerConfig);
    return {
      tokenizer: engine.kimiTokenizer({
        tiktokenModel: folder.remote!.tiktokenModel,
        config: isJsonObject(config) ? config : {},
        kimi: folder.remote!.kimi,
      }),
      incremental: true,
      lineChunks: false,
    };
  }
  // Parsed once: the checks read it before the tokenizer takes it.
  const parsed: unknown = JSON.parse(folder.tokenizerJson);
  // The DeepSeek modes load PreTrainedTokenizerFast itself, which keeps
  // tokenizer.json as written whatever class the folder names.
  if (mode === "hf") {
    engine.checkTransformersRebuild({
      tokenizerJson: parsed,
      tokenizerConfig: folder.tokenizerConfig,
      modelConfig: folder.modelConfig,
    });
  }
  const incremental = engine.isSegmentationSafe(parsed);
  return {
    tokenizer: engine.loadTokenizer({ tokenizerJson: parsed, tokenizerConfig }),
    incremental,
    lineChunks: incremental && engine.isLineChunkSafe(parsed),
  };
}

/** `config.json`'s `model_type`, as vLLM's `hf_config.model_type` reads it. */
function modelType(modelConfig: string | undefined): unknown {
  if (modelConfig === undefined) return undefined;
  try {
    const config: unknown = JSON.parse(modelConfig);
    return isJsonObject(config) ? config.model_type : undefined;
  } catch {
    return undefined;
  }
}

function sha256(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}
