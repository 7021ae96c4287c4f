/**
 * The conversation digests of a request's longest prefixes, computed as the
 * anchor store computes its keys (see `AnchorStore.keys`), so that a key
 * recorded by one replica is the key another looks up. The local store
 * hashes only the lengths it holds; a replica cannot know which lengths the
 * shared store holds, so it hashes the last few.
 *
 * @module
 */
import { createHash } from "node:crypto";
import { canonicalMessage } from "../anchors/canonical.ts";

/**
 * [length, digest] of each prefix of `messages` of at least `from`
 * messages, shortest first; the last is the whole conversation's digest.
 *
 * @param model The model (and tools) part of the conversation key.
 * @param messages The messages of the request.
 * @param from The shortest prefix length wanted (at least 1).
 * @throws {RangeError} For content nested too deeply to canonicalise.
 */
export function prefixDigests(
  model: string,
  messages: readonly unknown[],
  from: number,
): [number, string][] {
  const hash = createHash("sha256");
  // The same bytes as AnchorStore.keys: the model, then each canonical
  // message, each followed by NUL, in one stream.
  let pending = `${model}\u0000`;
  const digests: [number, string][] = [];
  for (let i = 0; i < messages.length; i++) {
    pending += `${canonicalMessage(messages[i])}\u0000`;
    const length = i + 1;
    if (length < from) continue;
    hash.update(pending);
    pending = "";
    digests.push([
      length,
      length === messages.length
        ? hash.digest("hex")
        : hash.copy().digest("hex"),
    ]);
  }
  return digests;
}
