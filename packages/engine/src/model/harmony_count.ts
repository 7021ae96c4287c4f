/**
 * Counts a gpt-oss chat as vLLM's chat path does: the Harmony render
 * (harmony/render.ts) of the conversation on the date vLLM would write,
 * its formatting tokens one each, its texts encoded one by one with no
 * special token recognised, as openai-harmony's `render_text_into`
 * (`encode_ordinary`) does. Each text's count is kept in the piece store,
 * so a growing agent loop tokenizes only its new messages.
 *
 * @module
 */
import { createHash } from "node:crypto";
import process from "node:process";
import { EngineError } from "../common/errors.ts";
import type { HarmonyPiece } from "../harmony/render.ts";
import type { LocalTokenizer } from "../tokenizer/tokenizer.ts";
import type { PieceStore } from "./prefix.ts";

/** The formatting tokens a render may hold, each one id of o200k_harmony. */
const FORMATTING_TOKENS = [
  "<|start|>",
  "<|channel|>",
  "<|constrain|>",
  "<|message|>",
  "<|end|>",
  "<|call|>",
];

/**
 * The conversation's start date as vLLM's `get_system_message` takes it:
 * `VLLM_SYSTEM_START_DATE` when set and not empty, else the server's
 * local date (`datetime.now().strftime("%Y-%m-%d")`), here from `now`.
 *
 * @param now The clock.
 * @returns The date.
 */
export function harmonyStartDate(now: () => Date): string {
  let pinned: string | undefined;
  try {
    pinned = process.env.VLLM_SYSTEM_START_DATE;
  } catch {
    // Without permission to read the environment, the clock decides.
  }
  if (pinned !== undefined && pinned !== "") return pinned;
  const date = now();
  const pad = (value: number) => String(value).padStart(2, "0");
  return `${String(date.getFullYear()).padStart(4, "0")}-${
    pad(date.getMonth() + 1)
  }-${pad(date.getDate())}`;
}

/**
 * vLLM's `VLLM_GPT_OSS_HARMONY_SYSTEM_INSTRUCTIONS` as it reads it
 * (`bool(int(value))`, unset `0`).
 */
export function harmonySystemInstructions(): boolean {
  let value: string | undefined;
  try {
    value = process.env.VLLM_GPT_OSS_HARMONY_SYSTEM_INSTRUCTIONS;
  } catch {
    // Unreadable: vLLM's default.
  }
  return /^\s*[+-]?[0-9_]*[1-9][0-9_]*\s*$/.test(value ?? "");
}

/** Counts Harmony renders with one tokenizer, each text's count kept. */
export class HarmonyCounter {
  readonly #tokenizer: Pick<LocalTokenizer, "count">;
  readonly #keyPrefix: string;
  readonly #store: PieceStore;

  /**
   * @param tokenizer The folder's tokenizer (o200k_harmony's `tokenizer.json`).
   * @param tokenizerSha256 Joins every text's key.
   * @param store Where text counts are kept.
   * @throws {EngineError} If the tokenizer lacks a formatting token.
   */
  constructor(
    tokenizer: Pick<LocalTokenizer, "count" | "addedTokens">,
    tokenizerSha256: string,
    store: PieceStore,
  ) {
    const missing = FORMATTING_TOKENS.filter((token) =>
      !tokenizer.addedTokens.includes(token)
    );
    if (missing.length > 0) {
      throw new EngineError(
        `Cannot count through Harmony as tokenizer.json lacks its formatting tokens ${
          missing.join(" ")
        }`,
      );
    }
    this.#tokenizer = tokenizer;
    this.#keyPrefix = `${tokenizerSha256}\0harmony\0`;
    this.#store = store;
  }

  /**
   * The number of tokens of a render.
   *
   * @param pieces The render.
   * @returns Its token count.
   */
  count(pieces: readonly HarmonyPiece[]): number {
    let total = 0;
    for (const piece of pieces) {
      total += typeof piece === "string" ? this.#text(piece) : 1;
    }
    return total;
  }

  #text(text: string): number {
    if (text === "") return 0;
    const key = this.#keyPrefix +
      createHash("sha256").update(text).digest("base64");
    let count = this.#store.get(key);
    if (count === undefined) {
      count = this.#tokenizer.count(text, {
        addSpecialTokens: false,
        splitAddedTokens: false,
      });
      this.#store.set(key, count);
    }
    return count;
  }
}
