/**
 * The hash chains of the last few conversations an anchor store hashed, so
 * that a conversation that grew hashes only its new messages: the proxy
 * parses each request afresh, so a message is known unchanged by comparing
 * it with the shape of the one hashed before (the engine's `PlainShapes`),
 * which costs far less than writing it out canonically and hashing it again.
 *
 * @module
 */
import { createHash, type Hash } from "node:crypto";
import { PlainShapes } from "@incontext/engine";
import { canonicalMessage } from "./canonical.ts";

/** Conversations remembered: a few agents interleaved still find theirs. */
const RECENT = 4;

/** A conversation hashed: its messages' shapes, the key after each, the hash at its end. */
interface Chain {
  readonly model: string;
  readonly shapes: PlainShapes;
  /** `digests[i]` is the key of the first `i + 1` messages. */
  readonly digests: string[];
  readonly hash: Hash;
}

/** The recent hash chains of one store. */
export class HashChains {
  #recent: Chain[] = [];

  /**
   * The key of every prefix of a conversation: `[i]` of its first `i + 1`
   * messages, the SHA-256 chain over the model and the canonical messages.
   *
   * @throws What `canonicalMessage` throws for content nested too deeply.
   */
  digests(model: string, messages: readonly unknown[]): readonly string[] {
    let best: Chain | undefined;
    let shared = 0;
    for (const chain of this.#recent) {
      if (chain.model !== model || chain.shapes.length <= shared) continue;
      const i = chain.shapes.sharedPrefix(messages);
      if (i > shared) {
        shared = i;
        best = chain;
      }
    }
    // A chain the conversation holds whole goes on from its end; otherwise
    // (an edit, a shorter list) the hash starts again.
    const whole = best !== undefined && shared === best.shapes.length
      ? best
      : undefined;
    this.#recent = this.#recent.filter((chain) => chain !== whole);
    const chain = whole ?? {
      model,
      shapes: new PlainShapes(),
      digests: [],
      hash: createHash("sha256").update(`${model}\u0000`),
    };
    let kept = true;
    for (let i = chain.digests.length; i < messages.length; i++) {
      // Canonical JSON escapes NUL, so the separator keeps messages apart.
      chain.hash.update(`${canonicalMessage(messages[i])}\u0000`);
      chain.digests.push(chain.hash.copy().digest("hex"));
      // What is not plain data is never found equal: the chain is not kept.
      kept &&= chain.shapes.push(messages[i]);
    }
    if (kept && messages.length > 0) {
      this.#recent = [chain, ...this.#recent].slice(0, RECENT);
    }
    return chain.digests;
  }

  /** Forgets every chain. */
  clear(): void {
    this.#recent = [];
  }
}
