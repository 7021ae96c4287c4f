/**
 * Usage anchors for growing conversations (Hermes PR #97206): an agent's turn
 * n+1 sends turn n's messages, the assistant's reply and new messages, and
 * turn n's response `usage` says exactly what turn n's prompt and reply cost.
 * So the prompt of turn n+1 is about prompt_n + completion_n + the tokens of
 * what follows the reply, and only that tail needs counting.
 *
 * @module
 */

import { createHash } from "node:crypto";
import { HashChains } from "./chains.ts";
import { RecentMap } from "../_internal/recent_map.ts";
import type { Usage } from "./usage.ts";

export { canonicalMessage } from "./canonical.ts";

/** Options of {@linkcode AnchorStore}. */
export interface AnchorStoreOptions {
  /**
   * How many anchors are kept; the least recently used goes first.
   * @default 4096
   */
  readonly maxEntries?: number;
}

/** The anchor a request extends. */
export interface AnchorMatch {
  /** Prompt tokens of the anchored request, from its response's usage. */
  readonly promptTokens: number;
  /** Tokens of the anchored request's reply, from its response's usage. */
  readonly completionTokens: number;
  /** How many leading messages of the new request equal the anchored request's messages. */
  readonly prefixLength: number;
}

/** What one recorded request cost. */
interface Anchor {
  readonly promptTokens: number;
  readonly completionTokens: number;
}

const DEFAULT_MAX_ENTRIES = 4096;

/**
 * The keys of one conversation: the key of all its messages, and the keys of
 * those of its prefixes whose length the store holds an anchor for.
 */
export interface ConversationKeys {
  /** The key of the whole conversation, to record its usage under. */
  readonly full: string;
  /** How many messages the conversation has. */
  readonly length: number;
  /** [prefix length, key] for the lengths worth looking up, longest last. */
  readonly prefixes: readonly (readonly [number, string])[];
}

interface Stored extends Anchor {
  readonly length: number;
}

/**
 * A bounded store of usage anchors: what each recorded request cost, found
 * again by any later request that extends its conversation. Keys are a hash
 * chain over the canonical messages of a request (h0 = sha256(model),
 * hi = sha256(hi-1 + canonical(mi))): a lookup hashes each prefix of the new
 * request once, in one pass over its bytes, and only the full-prefix key of
 * each recorded request is stored, so an entry costs a 64-character key and
 * two numbers. One store is shared by whatever records usage (the proxy,
 * `budgetedFetch`) and whatever reads it (the `AnchoredBackend`).
 *
 * @example Recording a turn and finding it from the next one
 * ```ts
 * import { AnchorStore } from "@incontext/incontext/anchored";
 * import { deepStrictEqual } from "node:assert/strict";
 *
 * const anchors = new AnchorStore({ maxEntries: 100 });
 * const turn1 = [{ role: "user", content: "Hi" }];
 * anchors.record("m", turn1, { promptTokens: 9, completionTokens: 4 });
 * const turn2 = [...turn1, { role: "assistant", content: "Hello!" }, { role: "user", content: "More" }];
 * deepStrictEqual(anchors.lookup("m", turn2), { promptTokens: 9, completionTokens: 4, prefixLength: 1 });
 * ```
 */
export class AnchorStore {
  readonly #maxEntries: number;
  /** Anchors by key, least recently used first. */
  readonly #anchors = new RecentMap<string, Stored>();
  /** How many anchors cover each conversation length: only these are looked up. */
  readonly #lengths = new Map<number, number>();
  /** The last conversations hashed: a grown one hashes only its new messages. */
  readonly #chains = new HashChains();

  /**
   * Creates an empty store.
   *
   * @param options The bound of the store.
   * @throws {RangeError} When `maxEntries` is not a positive integer.
   */
  constructor(options: AnchorStoreOptions = {}) {
    const maxEntries = options.maxEntries ?? DEFAULT_MAX_ENTRIES;
    if (!Number.isSafeInteger(maxEntries) || maxEntries < 1) {
      throw new RangeError(
        `Cannot create the anchor store as 'maxEntries' must be a positive integer: current value is ${maxEntries}`,
      );
    }
    this.#maxEntries = maxEntries;
  }

  /** How many anchors the store holds. */
  get size(): number {
    return this.#anchors.size;
  }

  /**
   * Remembers that `messages`, as sent for `model`, cost `usage`.
   *
   * @param model The model the request named.
   * @param messages The messages of the request, as sent.
   * @param usage The usage of its response.
   * @throws {TypeError} When `model` is not a string or `messages` not an array.
   * @throws {RangeError} When a count of `usage` is not a non-negative integer.
   */
  record(model: string, messages: readonly unknown[], usage: Usage): void {
    checkRequest("record", model, messages);
    checkUsage(usage);
    // No conversation, nothing a later request could extend.
    if (messages.length === 0) return;
    this.recordKeys(this.keys(model, messages), usage);
  }

  /**
   * Hashes a conversation once: one SHA-256 stream over the model and the
   * canonical messages, a digest after each message (`HashChains`: a
   * conversation that grew from one hashed lately hashes only its new
   * messages). A caller that looks up and later records the same
   * conversation computes this once and passes it on.
   *
   * @param model The model (and whatever else must match) of the request.
   * @param messages The messages of the request.
   * @returns The conversation's keys.
   * @throws {TypeError} When `model` is not a string or `messages` not an array.
   */
  keys(model: string, messages: readonly unknown[]): ConversationKeys {
    checkRequest("hash", model, messages);
    if (messages.length === 0) {
      return { full: sha256Of(model), length: 0, prefixes: [] };
    }
    const digests = this.#chains.digests(model, messages);
    const n = messages.length;
    const prefixes: [number, string][] = [];
    // The lengths the store holds, from the shorter list of the two.
    if (this.#lengths.size < n) {
      for (const length of this.#lengths.keys()) {
        if (length <= n) prefixes.push([length, digests[length - 1]!]);
      }
      prefixes.sort((a, b) => a[0] - b[0]);
    } else {
      for (let length = 1; length <= n; length++) {
        if (this.#lengths.has(length)) {
          prefixes.push([length, digests[length - 1]!]);
        }
      }
    }
    return { full: digests[n - 1]!, length: n, prefixes };
  }

  /**
   * The keys of a conversation's prefixes of `from` messages or more,
   * shortest first; the last is the whole conversation's (`keys().full`).
   * For a store that cannot know which lengths are anchored elsewhere (a
   * replica reading the shared store).
   *
   * @param model The model (and whatever else must match) of the request.
   * @param messages The messages of the request.
   * @param from The shortest prefix wanted (at least 1).
   * @returns [length, key] of each prefix.
   * @throws {TypeError} When `model` is not a string or `messages` not an array.
   */
  prefixKeys(
    model: string,
    messages: readonly unknown[],
    from: number,
  ): [number, string][] {
    checkRequest("hash", model, messages);
    const digests = this.#chains.digests(model, messages);
    const keys: [number, string][] = [];
    for (let length = Math.max(1, from); length <= digests.length; length++) {
      keys.push([length, digests[length - 1]!]);
    }
    return keys;
  }

  /**
   * Remembers the usage of the conversation `keys` describe.
   *
   * @param keys From {@linkcode AnchorStore.keys}.
   * @param usage The usage of its response.
   * @throws {RangeError} When a count of `usage` is not a non-negative integer.
   */
  recordKeys(keys: ConversationKeys, usage: Usage): void {
    checkUsage(usage);
    if (keys.length === 0) return;
    const previous = this.#anchors.peek(keys.full);
    this.#anchors.put(keys.full, {
      promptTokens: usage.promptTokens,
      completionTokens: usage.completionTokens,
      length: keys.length,
    });
    if (previous?.length !== keys.length) {
      if (previous !== undefined) this.#uncount(previous.length);
      this.#lengths.set(keys.length, (this.#lengths.get(keys.length) ?? 0) + 1);
    }
    while (this.#anchors.size > this.#maxEntries) {
      this.#forget(this.#anchors.oldest()!);
    }
  }

  /**
   * The anchor of the longest prefix `keys` names that the store holds,
   * marked as recently used.
   *
   * @param keys From {@linkcode AnchorStore.keys}.
   * @returns The anchor and how many messages it covers, or `undefined`.
   */
  lookupKeys(keys: ConversationKeys): AnchorMatch | undefined {
    for (let i = keys.prefixes.length - 1; i >= 0; i--) {
      const [length, key] = keys.prefixes[i]!;
      const anchor = this.#anchors.use(key);
      if (anchor === undefined) continue;
      return {
        promptTokens: anchor.promptTokens,
        completionTokens: anchor.completionTokens,
        prefixLength: length,
      };
    }
    return undefined;
  }

  /**
   * Finds the anchor of the longest recorded conversation that `messages`
   * starts with, and marks it as recently used.
   *
   * @param model The model the request names.
   * @param messages The messages of the request.
   * @returns The anchor and how many messages it covers, or `undefined`.
   * @throws {TypeError} When `model` is not a string or `messages` not an array.
   */
  lookup(
    model: string,
    messages: readonly unknown[],
  ): AnchorMatch | undefined {
    checkRequest("look up", model, messages);
    if (this.#anchors.size === 0) return undefined;
    return this.lookupKeys(this.keys(model, messages));
  }

  /** Forgets every anchor. */
  clear(): void {
    this.#anchors.clear();
    this.#lengths.clear();
    this.#chains.clear();
  }

  #forget(key: string): void {
    const anchor = this.#anchors.peek(key);
    if (anchor === undefined) return;
    this.#anchors.delete(key);
    this.#uncount(anchor.length);
  }

  #uncount(length: number): void {
    const left = (this.#lengths.get(length) ?? 1) - 1;
    if (left > 0) this.#lengths.set(length, left);
    else this.#lengths.delete(length);
  }
}

/** The key of a conversation without messages. */
function sha256Of(model: string): string {
  return createHash("sha256").update(`${model}\u0000`).digest("hex");
}

function checkRequest(
  action: string,
  model: unknown,
  messages: unknown,
): void {
  if (typeof model !== "string" || !Array.isArray(messages)) {
    throw new TypeError(
      `Cannot ${action} the anchor as 'model' must be a string and 'messages' an array`,
    );
  }
}

function isCount(value: unknown): value is number {
  return Number.isSafeInteger(value) && (value as number) >= 0;
}

function checkUsage(usage: Usage): void {
  if (!isCount(usage.promptTokens) || !isCount(usage.completionTokens)) {
    // The counts came from a response body, so they stay out of the message.
    throw new RangeError(
      "Cannot record the anchor as 'usage.promptTokens' and 'usage.completionTokens' must be non-negative integers",
    );
  }
}
