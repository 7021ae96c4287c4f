/**
 * The special-token map of `tokenizer_config.json`, as transformers hands it
 * to chat templates.
 *
 * @module
 */

/**
 * Reads the `*_token` entries of a tokenizer config: a string, or an
 * AddedToken object whose `.content` is the token text. Missing or null
 * entries are left out, so templates see them as undefined.
 *
 * @example Read the special tokens
 * ```ts
 * import { specialTokensOf } from "./config.ts";
 * const tokens = specialTokensOf({
 *   bos_token: { content: "<s>", __type: "AddedToken" },
 *   eos_token: "</s>",
 *   pad_token: null,
 * });
 * console.assert(tokens.bos_token === "<s>" && tokens.eos_token === "</s>");
 * console.assert(!("pad_token" in tokens));
 * ```
 *
 * @param config The parsed `tokenizer_config.json`.
 * @returns The token texts by variable name.
 */
export function specialTokensOf(
  config: Readonly<Record<string, unknown>>,
): Record<string, string> {
  const tokens: Record<string, string> = {};
  for (const [key, value] of Object.entries(config)) {
    if (!key.endsWith("_token")) continue;
    const text = contentOf(value);
    if (text !== undefined) tokens[key] = text;
  }
  return tokens;
}

function contentOf(value: unknown): string | undefined {
  if (typeof value === "string") return value;
  if (typeof value === "object" && value !== null && "content" in value) {
    const content = (value as { content: unknown }).content;
    if (typeof content === "string") return content;
  }
  return undefined;
}
