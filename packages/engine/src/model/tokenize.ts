/**
 * What a vLLM-compatible `/tokenize` and `/detokenize` compute from a loaded
 * model folder: the ids of a request body, and the text or token strings of
 * ids. Run by whichever host holds the model: the count cache's core (its
 * worker) or the calling thread.
 *
 * @module
 */
import type { JsonObject } from "../common/request.ts";
import { EngineError } from "../common/errors.ts";
import { isJsonObject } from "../common/request.ts";
import { type Loaded, renderPayload } from "./chat_render.ts";
import { SegmentIds } from "./segment_ids.ts";

/** How ids are decoded: `/detokenize`'s text, or `/tokenize`'s `token_strs`. */
export type DecodeForm = "text" | "strings";

/** The token ids of a `/tokenize` body, as vLLM's tokenize endpoint computes them. */
export function payloadIds(loaded: Loaded, payload: JsonObject): number[] {
  if (typeof payload.prompt === "string" && payload.messages === undefined) {
    return loaded.tokenizer.encode(payload.prompt, {
      addSpecialTokens: payload.add_special_tokens !== false,
    });
  }
  if (
    !Array.isArray(payload.messages) || !payload.messages.every(isJsonObject)
  ) {
    throw new EngineError(
      "Cannot tokenize the body as it has neither a 'prompt' string nor a 'messages' array of objects",
    );
  }
  const chat = {
    ...payload,
    add_generation_prompt: payload.add_generation_prompt ?? true,
  };
  const own = payload.chat_template;
  const { parts, addSpecialTokens } = renderPayload(loaded, chat, {
    split: false,
    ...(typeof own === "string" ? { ownTemplate: own } : {}),
  });
  const text = parts[0]!;
  // Segment by segment where that is the same encoding: a grown
  // conversation's earlier segments keep their ids.
  if (loaded.incremental && !addSpecialTokens) {
    let segments = segmentIds.get(loaded);
    if (segments === undefined) {
      segmentIds.set(loaded, segments = new SegmentIds(loaded.tokenizer));
    }
    return segments.encode(text);
  }
  return loaded.tokenizer.encode(text, { addSpecialTokens });
}

/** The segment ids of each loaded model, dropped with it. */
const segmentIds = new WeakMap<Loaded, SegmentIds>();

/**
 * The text of `ids` (special tokens kept, as `/detokenize` gives it) or
 * each id's vocabulary string.
 *
 * @throws {EngineError} If `ids` is not an array of ids in the vocabulary.
 */
export function decodeIds(
  loaded: Loaded,
  ids: unknown,
  form: DecodeForm,
): string | string[] {
  const { tokenizer } = loaded;
  if (!Array.isArray(ids) || !ids.every(tokenizer.isTokenId)) {
    throw new EngineError(
      "Cannot detokenize as 'tokens' must be an array of token ids in the vocabulary",
    );
  }
  return form === "text" ? tokenizer.decode(ids) : tokenizer.tokenStrings(ids);
}
