/**
 * The options every bundled HTTP counting backend takes besides its URL and
 * key: one definition, so that each backend documents only its own.
 *
 * @module
 */
import type { CountCache } from "../../cache/mod.ts";

/**
 * Options shared by the HTTP counting backends (`vllm`, `llamacpp`, `tgi`,
 * `sglang`, `anthropic`, `gemini`, `openai`).
 *
 * @example The same settings for two backends
 * ```ts
 * import { type HttpCountOptions, VllmBackend } from "@incontext/incontext/vllm";
 * import { TgiBackend } from "@incontext/incontext/tgi";
 *
 * const shared: HttpCountOptions = { timeoutSeconds: 5, userAgent: "my-agent/1.0", cache: null };
 * new VllmBackend({ ...shared, url: "http://127.0.0.1:8000/tokenize" });
 * new TgiBackend({ ...shared, url: "http://127.0.0.1:8080" });
 * ```
 */
export interface HttpCountOptions {
  /**
   * How long one count may take, in seconds; finite and greater than 0. One
   * deadline covers the whole count, waiting on an identical count in the
   * cache included.
   *
   * @default {30}
   */
  readonly timeoutSeconds?: number;
  /**
   * The `User-Agent` header.
   *
   * @default {`incontext/${VERSION}`}
   */
  readonly userAgent?: string;
  /**
   * The fetch implementation, for tests or a custom HTTP client.
   *
   * @default {globalThis.fetch}
   */
  readonly fetch?: typeof globalThis.fetch;
  /**
   * Where counts are cached; `null` disables caching.
   *
   * @default {sharedCountCache()} resolved at each count, so construction starts nothing
   */
  readonly cache?: CountCache | null;
}
