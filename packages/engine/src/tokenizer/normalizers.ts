/**
 * The normalizers of `tokenizer.json` the engine runs as the Rust
 * `tokenizers` crate does (`normalizers/`): Unicode forms, Lowercase,
 * Replace, Prepend, Strip, StripAccents, and Sequences of them.
 *
 * @module
 */
import { regexOf, SPACE } from "./patterns.ts";

/** A normalizer: the normalized text of a stretch of text. */
export type Normalize = (text: string) => string;

const LEADING_SPACE = new RegExp(`^[${SPACE}]+`, "u");
const TRAILING_SPACE = new RegExp(`[${SPACE}]+$`, "u");
const MARKS = /\p{M}/gu;

/**
 * The normalizer of a `normalizer` of tokenizer.json: `null` for none,
 * `undefined` for one the engine does not run.
 *
 * @example Replace, then prepend
 * ```ts
 * import { normalizerOf } from "./normalizers.ts";
 * const normalize = normalizerOf({
 *   type: "Sequence",
 *   normalizers: [
 *     { type: "Prepend", prepend: "▁" },
 *     { type: "Replace", pattern: { String: " " }, content: "▁" },
 *   ],
 * })!;
 * console.assert(normalize("a b") === "▁a▁b");
 * ```
 *
 * @param config The `normalizer` object.
 * @returns The normalizer, `null`, or `undefined`.
 */
export function normalizerOf(
  config: unknown,
  depth = 0,
): Normalize | null | undefined {
  if (config === null) return null;
  if (!isRecord(config) || depth > 8) return undefined;
  switch (config.type) {
    case "NFC":
    case "NFD":
    case "NFKC":
    case "NFKD": {
      const form = config.type;
      return (text) => text.normalize(form);
    }
    case "Lowercase":
      return lowercase;
    case "StripAccents":
      return (text) => text.replace(MARKS, "");
    case "Strip": {
      const { strip_left: left, strip_right: right } = config;
      if (typeof left !== "boolean" || typeof right !== "boolean") return;
      return (text) => {
        if (left) text = text.replace(LEADING_SPACE, "");
        return right ? text.replace(TRAILING_SPACE, "") : text;
      };
    }
    case "Prepend": {
      const prepend = config.prepend;
      if (typeof prepend !== "string") return undefined;
      return (text) => text.length === 0 ? text : prepend + text;
    }
    case "Replace":
      return replacer(config.pattern, config.content);
    case "Sequence": {
      if (!Array.isArray(config.normalizers)) return undefined;
      const steps: Normalize[] = [];
      for (const inner of config.normalizers) {
        const step = normalizerOf(inner, depth + 1);
        if (step === undefined) return undefined;
        if (step !== null) steps.push(step);
      }
      return steps.length === 0 ? null : (text) => {
        for (const step of steps) text = step(text);
        return text;
      };
    }
    default:
      return undefined;
  }
}

/**
 * The crate's Lowercase: each character's own lowercase, so a final
 * sigma stays σ (JavaScript's `toLowerCase` of a whole string makes it ς).
 */
function lowercase(text: string): string {
  if (!text.includes("\u03a3")) return text.toLowerCase();
  let out = "";
  for (const char of text) out += char.toLowerCase();
  return out;
}

/** Every match of the pattern replaced by the content, taken literally. */
function replacer(pattern: unknown, content: unknown): Normalize | undefined {
  if (typeof content !== "string") return undefined;
  const regex = regexOf(pattern);
  if (regex !== undefined) return (text) => text.replace(regex, () => content);
  if (!isRecord(pattern) || typeof pattern.String !== "string") return;
  const literal = pattern.String;
  if (literal === "") return undefined;
  return (text) => text.split(literal).join(content);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
