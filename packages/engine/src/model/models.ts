/**
 * Where local counts run: the model folders loaded once per spec, and the
 * count of one request from its `/tokenize` payload. The count cache's core
 * hosts one of these (in its worker, or in process as the fallback), so the
 * tokenizer, the template and every render stay off the caller's thread; a
 * LocalBackend without a cache hosts its own on the calling thread.
 *
 * @module
 */
import { getLogger } from "@logtape/logtape";
import { createHash } from "node:crypto";
import { stringifyJson } from "../common/python_json.ts";
import type { JsonObject, RequestKind } from "../common/request.ts";
import { EngineError } from "../common/errors.ts";
import { asEngineError } from "../common/errors.ts";
import {
  type ContentFormatOption,
  type FilesSha256,
  type Loaded,
  loadFolder,
  renderPayload,
} from "./chat_render.ts";
import { type PieceStore, PrefixCounter } from "./prefix.ts";
import type { HarmonyCounter } from "./harmony_count.ts";
import { type DecodeForm, decodeIds, payloadIds } from "./tokenize.ts";
import type { OwnedPayloads } from "./owned_payload.ts";

const logger = getLogger(["incontext", "local"]);

/** A model folder to count with: what `LocalBackendOptions` names of it. */
export interface ModelSpec {
  /** The model folder: `tokenizer.json`, `tokenizer_config.json`, the templates. */
  readonly dir: string;
  /** A chat template file or text, in place of the folder's own. */
  readonly chatTemplate?: string;
  /** The SHA-256 `tokenizer.json` must have: another revision fails to load. */
  readonly expectedSha256?: string;
  /** The clock of `strftime_now`: only for a host on the caller's thread (a function does not cross a port). */
  readonly now?: () => Date;
  /** The vLLM release whose preprocessing is mirrored. */
  readonly vllmVersion?: string;
  /** vLLM's tokenizer mode; `undefined` renders the chat template. */
  readonly tokenizerMode?: string;
  /** How templates read `message.content` (`auto`: detected as vLLM detects it). */
  readonly chatTemplateContentFormat?: ContentFormatOption;
  /** vLLM's `--default-chat-template-kwargs`, under each request's own. */
  readonly defaultChatTemplateKwargs?: Readonly<Record<string, unknown>>;
}

/** One count: the model, the request kind and vLLM's `/tokenize` payload. */
export interface LocalCountJob {
  /** The model folder. */
  readonly spec: ModelSpec;
  /** The kind of request the payload was built from. */
  readonly kind: RequestKind;
  /**
   * vLLM's `/tokenize` payload of the request. What vLLM's Harmony path
   * (gpt-oss) reads instead comes along: a chat's `reasoning_effort` and
   * `tool_choice`, a Responses request's own fields as `responses`. A
   * `refusal` says why the chat template cannot count it: it fails every
   * other folder's count.
   */
  readonly payload: Record<string, unknown>;
}

/** The cache a host counts through; whole requests and pieces share its bounds. */
export interface HostStore {
  /**
   * A whole request's count, or `undefined`; counted as a hit or a miss.
   * Without it no whole count is kept, and no key is computed.
   */
  readonly lookup?: (key: string) => number | undefined;
  /** Stores a whole request's count unless the cache was cleared after `epoch`. */
  store(key: string, count: number, epoch: number): void;
  /** Bumped by every clear. */
  epoch(): number;
  /** Piece counts. */
  readonly pieces: PieceStore;
}

interface Model {
  readonly loaded: Loaded;
  readonly pieces: PrefixCounter | null;
  /** For a gpt-oss folder: its chats count through Harmony. */
  readonly harmony: HarmonyCounter | null;
}

/** The key of a spec: two backends on the same folder share one load. */
function specKey(spec: ModelSpec): string {
  return JSON.stringify([
    spec.dir,
    spec.chatTemplate ?? null,
    spec.expectedSha256?.toLowerCase() ?? null,
    spec.vllmVersion ?? null,
    spec.tokenizerMode ?? null,
    spec.chatTemplateContentFormat ?? "auto",
    spec.defaultChatTemplateKwargs ?? null,
  ]);
}

/** Loads model folders once each and counts requests with them. */
export class LocalModels {
  readonly #store: HostStore;
  readonly #models = new Map<string, Promise<Model>>();
  readonly #ownsPayloads: boolean;
  /** Copies of the caller's messages and tools, when the payloads are the caller's. */
  #owned: Promise<OwnedPayloads> | undefined;
  #loads = 0;

  /**
   * Creates a host with no folder loaded yet.
   *
   * @param store Where counts are kept.
   * @param options `ownsPayloads`: the payloads are this host's own copies
   * (the count core's structured clones), never changed after a count, so
   * their message objects keep their converted template values from render
   * to render. Otherwise the host keeps copies of the messages and tools it
   * counted, and renders an unchanged message from its copy, to the same
   * effect.
   */
  constructor(store: HostStore, options: { ownsPayloads?: boolean } = {}) {
    this.#store = store;
    this.#ownsPayloads = options.ownsPayloads === true;
  }

  /** How many folder loads this host started. */
  get loads(): number {
    return this.#loads;
  }

  /**
   * Loads a folder (once; a read error is retried by the next call, a hash
   * mismatch is not).
   *
   * @returns The files' SHA-256.
   * @throws {EngineError} If the files fail to load or do not match the expected hash.
   */
  async load(spec: ModelSpec): Promise<FilesSha256> {
    return (await this.#model(spec)).loaded.files;
  }

  /**
   * What a count of the folder depends on, as one string: the files'
   * SHA-256, the vLLM release mirrored and the renderer.
   *
   * @throws {EngineError} If the files fail to load.
   */
  async identity(spec: ModelSpec): Promise<string> {
    return (await this.#model(spec)).loaded.identity;
  }

  /**
   * Counts one request: the render counted incrementally when the
   * tokenizer allows it; otherwise a whole-request lookup first (key: the
   * files' SHA-256, the kind and the payload's JSON), then the render.
   *
   * @throws {RequestRejectedError} If the template rejects the request.
   * @throws {EngineError} On any other failure; its message holds no prompt text.
   */
  async count(job: LocalCountJob): Promise<number> {
    try {
      const model = await this.#model(job.spec);
      const { lookup } = this.#store;
      // With pieces, a repeated chat costs a render and no tokenization,
      // about what the whole request's key would cost (JSON text and SHA-256
      // of up to 500 KB) on every count: such chats keep no whole counts.
      // A Harmony render holds the date: its chats keep no whole counts either.
      if (
        lookup === undefined ||
        (model.pieces !== null || model.harmony !== null) &&
          job.kind !== "completion"
      ) {
        return countPayload(model, await this.#own(job));
      }
      // A Responses request counts as the chat payload it becomes.
      const form = job.kind === "completion" ? "text" : "chat";
      const key = createHash("sha256")
        .update(`local ${model.loaded.identity} ${form}\n`)
        .update(stringifyJson(job.payload) ?? "")
        .digest("base64");
      const cached = lookup(key);
      if (cached !== undefined) return cached;
      const epoch = this.#store.epoch();
      const count = countPayload(model, await this.#own(job));
      this.#store.store(key, count, epoch);
      return count;
    } catch (error) {
      throw asEngineError(error, "The local count failed");
    }
  }

  /**
   * Renders a chat request's prompt (`kind` chat or responses) as vLLM
   * would, for a server whose `/tokenize` takes text (SGLang).
   *
   * @throws {RequestRejectedError} If the template rejects the request.
   * @throws {EngineError} On any other failure; its message holds no prompt text.
   */
  async render(job: LocalCountJob): Promise<string> {
    try {
      const { loaded } = await this.#model(job.spec);
      const { payload, reuse } = await this.#own(job);
      return renderPayload(loaded, payload, { reuse, split: false }).parts[0]!;
    } catch (error) {
      throw asEngineError(error, "The local render failed");
    }
  }

  /**
   * The ids of a vLLM `/tokenize` body (chat or text form).
   *
   * @throws {RequestRejectedError} If the template rejects the conversation.
   * @throws {EngineError} On any other failure; its message holds no prompt text.
   */
  async tokenize(spec: ModelSpec, body: JsonObject): Promise<number[]> {
    try {
      return payloadIds((await this.#model(spec)).loaded, body);
    } catch (error) {
      throw asEngineError(error, "The local tokenization failed");
    }
  }

  /**
   * The text of `ids`, or each id's vocabulary string.
   *
   * @throws {EngineError} If an id is not in the vocabulary, or the files fail to load.
   */
  async decode(
    spec: ModelSpec,
    ids: unknown,
    form: DecodeForm,
  ): Promise<string | string[]> {
    try {
      return decodeIds((await this.#model(spec)).loaded, ids, form);
    } catch (error) {
      throw asEngineError(error, "The local detokenization failed");
    }
  }

  /**
   * A chat job's payload as the host may render it with reuse: its own
   * copy, or the caller's when it cannot be copied (rendered without reuse).
   */
  async #own(job: LocalCountJob): Promise<OwnedJob> {
    if (this.#ownsPayloads) return { ...job, reuse: true };
    if (job.kind === "completion") return { ...job, reuse: false };
    // Loaded with the first chat count, as the render modules are.
    this.#owned ??= import("./owned_payload.ts").then((module) =>
      new module.OwnedPayloads()
    );
    const payload = (await this.#owned).adopt(job.payload);
    return payload === undefined
      ? { ...job, reuse: false }
      : { ...job, payload, reuse: true };
  }

  #model(spec: ModelSpec): Promise<Model> {
    const key = specKey(spec);
    let model = this.#models.get(key);
    if (model === undefined) {
      this.#loads++;
      model = this.#build(spec).catch((error) => {
        // A mismatch stays; a read error is retried by the next count.
        if (!(error instanceof EngineError)) this.#models.delete(key);
        throw asEngineError(error, "Cannot load the model folder");
      });
      this.#models.set(key, model);
    }
    return model;
  }

  async #build(spec: ModelSpec): Promise<Model> {
    const loaded = await loadFolder(spec, logger);
    return {
      loaded,
      harmony: loaded.harmony
        ? new loaded.engine.HarmonyCounter(
          loaded.tokenizer,
          loaded.files.tokenizer,
          this.#store.pieces,
        )
        : null,
      pieces: loaded.incremental
        ? new PrefixCounter(
          loaded.tokenizer,
          loaded.files.tokenizer,
          this.#store.pieces,
          { lineChunks: loaded.lineChunks },
        )
        : null,
    };
  }
}

/** A job, and whether its payload's objects are the host's own (rendered with reuse). */
interface OwnedJob extends LocalCountJob {
  readonly reuse: boolean;
}

function countPayload(
  model: Model,
  { payload, kind, reuse }: OwnedJob,
): number {
  const { loaded } = model;
  if (kind === "completion") {
    return loaded.tokenizer.count(payload.prompt as string, {
      addSpecialTokens: payload.add_special_tokens !== false,
    });
  }
  if (model.harmony !== null) {
    const { engine } = loaded;
    const date = engine.harmonyStartDate(loaded.now);
    // vLLM's Responses path converts the request's own fields.
    return model.harmony.count(
      kind === "responses"
        ? engine.renderHarmonyResponses(payload.responses, {
          date,
          systemInstructions: engine.harmonySystemInstructions(),
        })
        : engine.renderHarmony(payload, { date }),
    );
  }
  if (typeof payload.refusal === "string") {
    throw new EngineError(payload.refusal);
  }
  // In parts for the pieces: a reused loop item's part is compared with the
  // previous render's as the same string, and the whole text is never joined.
  const { parts, addSpecialTokens } = renderPayload(loaded, payload, {
    reuse,
    split: model.pieces !== null && payload.add_special_tokens !== true,
  });
  const pieces = addSpecialTokens ? null : model.pieces;
  // A grown conversation re-tokenizes only its new pieces.
  return pieces !== null
    ? pieces.count(parts)
    : loaded.tokenizer.count(parts.join(""), { addSpecialTokens });
}
