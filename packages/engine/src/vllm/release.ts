/**
 * The preprocessing rules where vLLM releases differ, by release: what
 * reaches the chat template of a request's reasoning, tool calls and tool
 * results, and which top-level fields the chat path folds into the template's
 * variables. docs/backends.md holds the same table with the vLLM change
 * behind each rule.
 *
 * @module
 */

/** How an assistant message's reasoning reaches the template. */
export type ReasoningRule =
  /** `reasoning or reasoning_content` (Python's `or`), under both names. */
  | "either"
  /** `reasoning` only (`reasoning_content` alone is dropped), under both names. */
  | "reasoning";

/** The rules of one vLLM release, where releases differ. */
export interface VllmRules {
  /** The release these rules are those of, such as `"0.16.0"`. */
  readonly release: string;
  /** Which input field carries the reasoning. */
  readonly reasoning: ReasoningRule;
  /** Whether an empty `tool_calls` list is dropped (else it reaches the template as `[]`). */
  readonly dropEmptyToolCalls: boolean;
  /** Whether the chat path gives `reasoning_effort` to the template. */
  readonly reasoningEffortKwarg: boolean;
  /** Whether a tool message's list of text parts is joined with `\n` for every template. */
  readonly joinToolContent: boolean;
}

type Rules = Omit<VllmRules, "release">;

/**
 * The releases where a rule changed, oldest first: a version uses the rules
 * of the newest entry at or below it.
 */
const RELEASES: readonly (readonly [string, Rules])[] = [
  ["0.12.0", {
    reasoning: "either",
    dropEmptyToolCalls: false,
    reasoningEffortKwarg: false,
    joinToolContent: false,
  }],
  ["0.14.0", {
    reasoning: "either",
    dropEmptyToolCalls: true,
    reasoningEffortKwarg: false,
    joinToolContent: false,
  }],
  ["0.15.0", {
    reasoning: "either",
    dropEmptyToolCalls: true,
    reasoningEffortKwarg: true,
    joinToolContent: false,
  }],
  ["0.16.0", {
    reasoning: "reasoning",
    dropEmptyToolCalls: true,
    reasoningEffortKwarg: true,
    joinToolContent: false,
  }],
  ["0.20.0", {
    reasoning: "reasoning",
    dropEmptyToolCalls: true,
    reasoningEffortKwarg: true,
    joinToolContent: true,
  }],
];

/** The oldest release whose rules are mirrored. */
export const OLDEST_VLLM_RELEASE = "0.12.0";

/** The newest release whose rules are known: the default. */
export const NEWEST_VLLM_RELEASE = "0.20.0";

/**
 * Reads a vLLM version string (`"0.16.0"`, `"0.16"`, `"v0.20.1"`,
 * `"0.20.1.dev12+gabc"`, `"0.16.0rc1"`) as its release numbers.
 *
 * @param version The version text.
 * @returns `[major, minor, patch]`, or `undefined` when it is not a version.
 */
export function parseVllmVersion(
  version: string,
): [number, number, number] | undefined {
  const match = /^v?(\d{1,4})\.(\d{1,4})(?:\.(\d{1,4}))?(?![\d])/.exec(
    version.trim(),
  );
  if (match === null) return undefined;
  return [Number(match[1]), Number(match[2]), Number(match[3] ?? 0)];
}

function compare(a: readonly number[], b: readonly number[]): number {
  for (let index = 0; index < 3; index++) {
    const diff = (a[index] ?? 0) - (b[index] ?? 0);
    if (diff !== 0) return diff;
  }
  return 0;
}

/**
 * The rules of a vLLM version: those of the newest known release at or below
 * it; the newest known release's for `undefined`.
 *
 * @param version A vLLM version, such as `"0.16.0"`.
 * @returns The rules, naming the release they are those of.
 * @throws {RangeError} If `version` is not a version, or is older than
 * {@linkcode OLDEST_VLLM_RELEASE}.
 */
export function vllmRules(version?: string): VllmRules {
  const wanted = parseVllmVersion(version ?? NEWEST_VLLM_RELEASE);
  if (wanted === undefined) {
    throw new RangeError(
      `Cannot mirror vLLM as the version must look like 0.16.0: current value is ${
        JSON.stringify(version)
      }`,
    );
  }
  let found: readonly [string, Rules] | undefined;
  for (const entry of RELEASES) {
    if (compare(parseVllmVersion(entry[0])!, wanted) <= 0) found = entry;
  }
  if (found === undefined) {
    throw new RangeError(
      `Cannot mirror vLLM ${version}: the oldest release mirrored is ${OLDEST_VLLM_RELEASE}`,
    );
  }
  return { release: found[0], ...found[1] };
}
