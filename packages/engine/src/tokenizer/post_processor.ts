/**
 * The special tokens a `post_processor` of `tokenizer.json` puts around a
 * single sequence when asked to (`add_special_tokens`), as the Rust
 * `tokenizers` crate does (`processors/`): TemplateProcessing's `single`
 * template with the ids of its `special_tokens`, BertProcessing's and
 * RobertaProcessing's `cls` and `sep`, ByteLevel's none, and a Sequence of
 * them each around the one before.
 *
 * @module
 */

/** The ids before and after a sequence's own. */
export interface Affixes {
  readonly before: readonly number[];
  readonly after: readonly number[];
}

const NONE: Affixes = { before: [], after: [] };

/**
 * The ids a post-processor adds around a single sequence with special
 * tokens, or `undefined` for one the engine does not read.
 *
 * @example Llama 3's BOS
 * ```ts
 * import { affixesOf } from "./post_processor.ts";
 * const affixes = affixesOf({
 *   type: "TemplateProcessing",
 *   single: [
 *     { SpecialToken: { id: "<|begin_of_text|>", type_id: 0 } },
 *     { Sequence: { id: "A", type_id: 0 } },
 *   ],
 *   special_tokens: { "<|begin_of_text|>": { id: "<|begin_of_text|>", ids: [128000], tokens: ["<|begin_of_text|>"] } },
 * })!;
 * console.assert(affixes.before.join() === "128000" && affixes.after.length === 0);
 * ```
 *
 * @param config The `post_processor` object.
 * @returns The ids before and after, or `undefined`.
 */
export function affixesOf(config: unknown, depth = 0): Affixes | undefined {
  if (config === null) return NONE;
  if (!isRecord(config) || depth > 8) return undefined;
  switch (config.type) {
    case "ByteLevel":
      return NONE;
    case "BertProcessing":
    case "RobertaProcessing": {
      const cls = idOf(config.cls);
      const sep = idOf(config.sep);
      if (cls === undefined || sep === undefined) return undefined;
      return { before: [cls], after: [sep] };
    }
    case "TemplateProcessing":
      return templateAffixes(config.single, config.special_tokens);
    case "Sequence": {
      if (!Array.isArray(config.processors)) return undefined;
      let affixes = NONE;
      for (const inner of config.processors) {
        const around = affixesOf(inner, depth + 1);
        if (around === undefined) return undefined;
        affixes = {
          before: [...around.before, ...affixes.before],
          after: [...affixes.after, ...around.after],
        };
      }
      return affixes;
    }
    default:
      return undefined;
  }
}

/** A `[token, id]` pair's id. */
function idOf(pair: unknown): number | undefined {
  if (!Array.isArray(pair) || pair.length !== 2) return undefined;
  return isId(pair[1]) ? pair[1] : undefined;
}

/** The `single` template around its one `Sequence` A, each special token its `ids`. */
function templateAffixes(
  single: unknown,
  specialTokens: unknown,
): Affixes | undefined {
  if (!Array.isArray(single) || !isRecord(specialTokens)) return undefined;
  const before: number[] = [];
  const after: number[] = [];
  let sequences = 0;
  for (const item of single) {
    if (!isRecord(item)) return undefined;
    if (isRecord(item.Sequence) && item.Sequence.id === "A") {
      sequences++;
      continue;
    }
    const special = isRecord(item.SpecialToken) ? item.SpecialToken : null;
    const name = special?.id;
    const entry = typeof name === "string" ? specialTokens[name] : undefined;
    if (!isRecord(entry) || !Array.isArray(entry.ids)) return undefined;
    for (const id of entry.ids) {
      if (!isId(id)) return undefined;
      (sequences === 0 ? before : after).push(id);
    }
  }
  return sequences === 1 ? { before, after } : undefined;
}

function isId(value: unknown): value is number {
  return Number.isSafeInteger(value) && (value as number) >= 0;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
