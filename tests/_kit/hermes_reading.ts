/**
 * How Hermes Agent reads a 400's message, mirrored from its source
 * (Hermes 0.20.0): `_classify_400` and the
 * context-overflow phrases of `agent/error_classifier.py`, and
 * `parse_available_output_tokens_from_error`, `is_output_cap_error` and
 * `parse_context_limit_from_error` of `agent/model_metadata.py`. Hermes
 * matches lower-cased substrings; the phrases below are the ones a budget
 * answer could plausibly contain.
 */

/** Phrases that make a 400 a context overflow Hermes compresses for. */
const OVERFLOW = [
  "context length",
  "context size",
  "maximum context",
  "token limit",
  "too many tokens",
  "reduce the length",
  "exceeds the limit",
  "context window",
  "prompt is too long",
  "max_tokens",
  "input token",
];

/** Request-validation phrases, read before the overflow ones: a format error. */
const VALIDATION = [
  "unknown parameter",
  "unsupported parameter",
  "unrecognized request argument",
];

/** What Hermes makes of a 400 with `message`. */
export interface HermesReading {
  /** The classifier's verdict: compress and retry. */
  readonly compresses: boolean;
  /**
   * The output cap Hermes would retry with instead of compressing, when it
   * reads the message as an output-cap error with a number in it.
   */
  readonly lowersCapTo: number | undefined;
  /** Whether Hermes reads it as an output-cap error at all. */
  readonly outputCapError: boolean;
  /** The context length Hermes takes from the message (it shrinks to a smaller one). */
  readonly contextLimit: number | undefined;
}

/** Hermes' reading of a 400 with this message. */
export function hermesReading(message: string): HermesReading {
  const text = message.toLowerCase();
  const validation = VALIDATION.some((phrase) => text.includes(phrase));
  return {
    compresses: !validation && OVERFLOW.some((phrase) => text.includes(phrase)),
    lowersCapTo: availableOutput(text),
    outputCapError: outputCapError(text),
    contextLimit: contextLimit(text),
  };
}

/** `parse_available_output_tokens_from_error`: vLLM's "requested N output tokens" form. */
function availableOutput(text: string): number | undefined {
  if (
    !(text.includes("maximum context length") && text.includes("requested") &&
      text.includes("output tokens"))
  ) {
    return undefined;
  }
  const context = /maximum context length is (\d+)\s*token/.exec(text);
  const input = /prompt contains (?:at least )?(\d+)\s*input tokens/.exec(text);
  if (context === null || input === null) return undefined;
  const available = Number(context[1]) - Number(input[1]);
  return available >= 1 ? available : undefined;
}

/** `is_output_cap_error`: a cap phrase about max_tokens, with no input-overflow phrase. */
function outputCapError(text: string): boolean {
  const cap = ["max_tokens", "max_output_tokens", "max_completion_tokens"]
    .some((name) => text.includes(name));
  const signal =
    (text.includes("requested") && text.includes("output tokens")) ||
    ["should be", "less than or equal", "must be"].some((p) =>
      text.includes(p)
    );
  const input = [
    "prompt is too long",
    "prompt too long",
    "input is too long",
    "input token",
    "prompt length",
    "prompt contains",
    "reduce the length",
  ].some((phrase) => text.includes(phrase));
  return cap && signal && !input;
}

/** `parse_context_limit_from_error`: the first pattern that finds a plausible number. */
function contextLimit(text: string): number | undefined {
  const patterns = [
    /max_model_len\s*(?:is\s*)?[:=(]?\s*(\d{4,})/,
    /maximum model length\s*(?:is\s*)?[:=(]?\s*(\d{4,})/,
    /(?:max(?:imum)?|limit)\s*(?:context\s*)?(?:length|size|window)?\s*(?:is|of|:)?\s*(\d{4,})/,
    /context\s*(?:length|size|window)\s*(?:is|of|:)?\s*(\d{4,})/,
    /(\d{4,})\s*(?:token)?\s*(?:context|limit)/,
    />\s*(\d{4,})\s*(?:max|limit|token)/,
    /(\d{4,})\s*(?:max(?:imum)?)\b/,
  ];
  for (const pattern of patterns) {
    const found = pattern.exec(text);
    if (found !== null) {
      const limit = Number(found[1]);
      if (limit >= 1024 && limit <= 10_000_000) return limit;
    }
  }
  return undefined;
}
