/**
 * Usage anchors shared by replicas: an {@linkcode AnchorStore} (the local
 * layer, bounded as ever) that writes each anchor it records to the shared
 * store, and that brings a request's anchor from the shared store into the
 * local layer before the request is counted.
 *
 * @module
 */
import type { JsonObject } from "../core/backend.ts";
import {
  AnchorStore,
  type AnchorStoreOptions,
  type ConversationKeys,
} from "../anchors/store.ts";
import { conversationKey } from "../anchors/keys.ts";
import type { Usage } from "../anchors/usage.ts";
import { anchorRecordKey, decodeAnchor, encodeAnchor } from "./records.ts";
import type { SharedStore } from "./store.ts";

/** Options of {@linkcode SharedAnchorStore}. */
export interface SharedAnchorStoreOptions extends AnchorStoreOptions {
  /** The store the replicas share. */
  readonly shared: SharedStore;
  /**
   * How many of a request's longest prefixes are looked up in the shared
   * store: the messages an agent may append between two turns.
   * @default 32
   */
  readonly lookback?: number;
}

/**
 * An anchor store whose anchors other replicas see: see the module
 * documentation. The proxy records into it and reads it as it would a
 * local store; {@linkcode SharedAnchorStore.prefetch} runs first.
 */
export class SharedAnchorStore extends AnchorStore {
  readonly #shared: SharedStore;
  readonly #lookback: number;

  /**
   * @param options The local bound, the shared store and the lookback.
   * @throws {RangeError} When a bound is not a positive integer.
   */
  constructor(options: SharedAnchorStoreOptions) {
    super(options);
    const lookback = options.lookback ?? 32;
    if (!Number.isSafeInteger(lookback) || lookback < 1) {
      throw new RangeError(
        `Cannot create the anchor store as 'lookback' must be a positive integer: current value is ${lookback}`,
      );
    }
    this.#shared = options.shared;
    this.#lookback = lookback;
  }

  /** Records locally, and writes the anchor to the shared store. */
  override recordKeys(keys: ConversationKeys, usage: Usage): void {
    super.recordKeys(keys, usage);
    if (keys.length === 0) return;
    this.#shared.write(
      "anchor",
      anchorRecordKey(keys.full),
      encodeAnchor({
        promptTokens: usage.promptTokens,
        completionTokens: usage.completionTokens,
        length: keys.length,
      }),
    );
  }

  /**
   * Brings the anchor of `request`'s conversation from the shared store into
   * the local layer: the longest anchored prefix the shared store holds, when
   * it is at least as long as the local layer's. The shared record of a
   * prefix the local layer holds too takes its place: it is the one written
   * last (a turn sent again, on another replica, with another reply), since
   * every replica writes there what it records. Never throws; resolves
   * within the shared store's deadline.
   *
   * @param request A chat request body.
   */
  async prefetch(request: JsonObject): Promise<void> {
    const key = conversationKey(request);
    if (key === undefined || key.messages.length === 0) return;
    const { model, messages } = key;
    let digests: [number, string][];
    try {
      digests = this.prefixKeys(
        model,
        messages,
        messages.length - this.#lookback + 1,
      );
    } catch {
      // Content nested too deeply to hash has no anchor anywhere.
      return;
    }
    const local = this.lookupKeys({
      full: digests.at(-1)![1],
      length: messages.length,
      prefixes: digests,
    });
    const wanted = digests.filter(([length]) =>
      length >= (local?.prefixLength ?? 0)
    );
    const texts = await this.#shared.read(
      "anchor",
      wanted.map(([, digest]) => anchorRecordKey(digest)),
    );
    if (texts === undefined) return;
    for (let i = wanted.length - 1; i >= 0; i--) {
      const [length, digest] = wanted[i]!;
      const record = decodeAnchor(texts[i] ?? null, length);
      if (record === "invalid") this.#shared.invalid("anchor");
      if (record === undefined || record === "invalid") continue;
      // Into the local layer only: the record came from the shared store.
      super.recordKeys({ full: digest, length, prefixes: [] }, record);
      return;
    }
  }
}
