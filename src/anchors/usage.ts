/**
 * Reads the `usage` an upstream reports while the response flows to the
 * client untouched: the proxy anchors later budgets on it (Hermes PR #97206),
 * and Hermes itself anchors its own estimate on the same bytes, so not one of
 * them may change or be held back.
 *
 * @module
 */

import { getLogger } from "@logtape/logtape";
import { errorType } from "../core/error_type.ts";

/** Token usage an upstream reported for one response. */
export interface Usage {
  /** Tokens of the prompt, as the server counted them. */
  readonly promptTokens: number;
  /** Tokens of the reply. */
  readonly completionTokens: number;
  /** Tokens of the prompt served from the server's prefix cache, when reported. */
  readonly cachedTokens?: number;
}

/** Options of {@linkcode tapUsage}. */
export interface TapOptions {
  /**
   * Bytes of a non-streamed JSON body kept for parsing, and of one event of a
   * stream; beyond, usage is not read from that body or event.
   * @default 8_388_608
   */
  readonly maxJsonBytes?: number;
}

const DEFAULT_MAX_JSON_BYTES = 8_388_608;

/**
 * Returns a stream that yields exactly the bytes of `body`, in the same chunks
 * and without waiting, and calls `onUsage` at most once, with the last usage
 * it saw: when the body ends, or for an event stream at its `[DONE]` event,
 * in the same turn as the client is handed that chunk and so before it can
 * read it (a client such as OpenAI's Python SDK stops at `[DONE]`, closes the
 * response and sends its next turn). JSON bodies (`application/json`,
 * `+json`) are parsed once at the end, event streams event by event; other
 * types pass through unread. A cancel of the returned stream cancels `body`;
 * an error of `body` errors it; neither calls `onUsage` unless `[DONE]` came
 * first.
 *
 * @param body The upstream response body.
 * @param contentType The upstream `content-type` header.
 * @param onUsage Told the usage; what it throws is logged by type and ignored.
 * @param options Bounds of what is kept for parsing.
 * @returns The body for the client.
 * @throws {TypeError} When `onUsage` is not a function.
 * @throws {RangeError} When `maxJsonBytes` is not a positive integer.
 */
export function tapUsage(
  body: ReadableStream<Uint8Array>,
  contentType: string | null,
  onUsage: (usage: Usage) => void,
  options: TapOptions = {},
): ReadableStream<Uint8Array> {
  if (typeof onUsage !== "function") {
    throw new TypeError("Cannot read usage as 'onUsage' must be a function");
  }
  const maxBytes = options.maxJsonBytes ?? DEFAULT_MAX_JSON_BYTES;
  if (!Number.isSafeInteger(maxBytes) || maxBytes < 1) {
    throw new RangeError(
      `Cannot read usage as 'maxJsonBytes' must be a positive integer: current value is ${maxBytes}`,
    );
  }
  const tap = tapFor(contentType, onUsage, maxBytes);
  // Nothing to read, so nothing to interpose: the client gets the body itself.
  if (tap === undefined) return body;
  return body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        // The client gets the chunk first; reading it must never delay it.
        controller.enqueue(chunk);
        tap.push(chunk);
      },
      flush() {
        tap.end();
      },
    }),
  );
}

/** What reads a body's usage chunk by chunk, for a stream that already passes them on. */
export interface UsageTap {
  /**
   * Reads one chunk (after the client got it); at an event stream's
   * `[DONE]`, tells `onUsage` the last usage seen.
   */
  push(chunk: Uint8Array): void;
  /** The body ended: tells `onUsage` the last usage seen, unless told already. */
  end(): void;
}

/**
 * {@linkcode tapUsage}'s reading without a stream of its own: for a caller
 * that already pipes the body through a stream (the proxy's idle guard), so
 * that each chunk takes one hop fewer. `undefined` for a body not read.
 *
 * @param contentType The upstream `content-type` header.
 * @param onUsage Told the usage; what it throws is logged.
 * @param maxJsonBytes The largest JSON body or event parsed.
 * @returns The tap, or `undefined` for a content type that carries no usage.
 */
export function tapFor(
  contentType: string | null,
  onUsage: (usage: Usage) => void,
  maxJsonBytes: number = DEFAULT_MAX_JSON_BYTES,
): UsageTap | undefined {
  const kind = bodyKind(contentType);
  if (kind === "other") return undefined;
  const reader = kind === "json"
    ? new JsonUsageReader(maxJsonBytes)
    : new SseUsageReader(maxJsonBytes);
  let told = false;
  const tell = () => {
    if (told) return;
    told = true;
    const usage = reader.end();
    if (usage !== undefined) report(onUsage, usage);
  };
  return {
    push: (chunk) => {
      if (told) return;
      reader.push(chunk);
      if (reader.complete) tell();
    },
    end: tell,
  };
}

/**
 * Reads the usage of a parsed response or stream event: chat and completions
 * `usage.prompt_tokens`/`completion_tokens`
 * (`prompt_tokens_details.cached_tokens`), Responses
 * `usage.input_tokens`/`output_tokens` (`input_tokens_details.cached_tokens`),
 * and the Responses stream events `response.completed` and
 * `response.incomplete`, whose `response` carries the usage.
 *
 * @param value A parsed JSON body or event.
 * @returns The usage, or `undefined` when there is none with non-negative
 * integer counts.
 */
export function readUsage(value: unknown): Usage | undefined {
  if (!isObject(value)) return undefined;
  if (
    (value.type === "response.completed" ||
      value.type === "response.incomplete") && isObject(value.response)
  ) {
    return usageOf(value.response.usage);
  }
  return usageOf(value.usage);
}

function usageOf(usage: unknown): Usage | undefined {
  if (!isObject(usage)) return undefined;
  const chat = "prompt_tokens" in usage;
  const prompt = chat ? usage.prompt_tokens : usage.input_tokens;
  const completion = chat ? usage.completion_tokens : usage.output_tokens;
  if (!isCount(prompt) || !isCount(completion)) return undefined;
  const details = chat
    ? usage.prompt_tokens_details
    : usage.input_tokens_details;
  const cached = isObject(details) ? details.cached_tokens : undefined;
  return isCount(cached)
    ? {
      promptTokens: prompt,
      completionTokens: completion,
      cachedTokens: cached,
    }
    : { promptTokens: prompt, completionTokens: completion };
}

function isCount(value: unknown): value is number {
  return Number.isSafeInteger(value) && (value as number) >= 0;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function bodyKind(contentType: string | null): "json" | "sse" | "other" {
  const type = (contentType ?? "").split(";", 1)[0]!.trim().toLowerCase();
  if (type === "application/json" || type.endsWith("+json")) return "json";
  return type === "text/event-stream" ? "sse" : "other";
}

function report(onUsage: (usage: Usage) => void, usage: Usage): void {
  try {
    onUsage(usage);
  } catch (error) {
    // The callback is the caller's bookkeeping; a bug there must not cut off
    // a response the client has almost received.
    getLogger(["incontext", "proxy"]).warn(
      "The usage callback threw ({errorType}); the response went on",
      { errorType: errorType(error) },
    );
  }
}

/** What {@linkcode tapUsage} feeds each chunk to, and asks at the end. */
interface UsageReader {
  push(chunk: Uint8Array): void;
  /** The body said it holds no more usage: an event stream's `[DONE]`. */
  readonly complete: boolean;
  end(): Usage | undefined;
}

/**
 * Keeps a JSON body as text up to a bound and parses it once at the end.
 * Chunks are decoded as they pass rather than kept, since the client may
 * reuse or transfer their buffers once it has them.
 */
class JsonUsageReader implements UsageReader {
  /** A JSON body is complete only at its end. */
  readonly complete = false;
  readonly #decoder = new TextDecoder();
  readonly #maxBytes: number;
  #bytes = 0;
  #text: string | undefined = "";

  constructor(maxBytes: number) {
    this.#maxBytes = maxBytes;
  }

  push(chunk: Uint8Array): void {
    if (this.#text === undefined) return;
    this.#bytes += chunk.byteLength;
    if (this.#bytes > this.#maxBytes) {
      this.#text = undefined;
      return;
    }
    this.#text += this.#decoder.decode(chunk, { stream: true });
  }

  end(): Usage | undefined {
    if (this.#text === undefined) return undefined;
    return parseUsage(this.#text + this.#decoder.decode());
  }
}

/** A usage object must follow a `"usage"` key; other events skip the parse. */
const MAY_HOLD_USAGE = /"usage"\s*:\s*\{/;

function parseUsage(text: string): Usage | undefined {
  if (!MAY_HOLD_USAGE.test(text)) return undefined;
  try {
    return readUsage(JSON.parse(text));
  } catch {
    // Not JSON: the client gets it as it is, and there is no usage to read.
    return undefined;
  }
}

/**
 * Parses an event stream as the SSE specification does (lines end at CRLF,
 * LF or CR; `data` lines join with LF; a blank line dispatches), keeping only
 * the event being read and the last usage seen, so memory is bounded by one
 * event. An event whose data exceeds the bound is dropped whole.
 */
class SseUsageReader implements UsageReader {
  readonly #decoder = new TextDecoder();
  readonly #maxChars: number;
  /** The start of a line whose end has not arrived yet. */
  #partial = "";
  /** The data lines of the event being read, each followed by LF. */
  #data = "";
  /** The event being read went over the bound; it ends at the next blank line. */
  #oversized = false;
  /** The line being read belongs to an oversized event and was discarded. */
  #lineDropped = false;
  /** The last chunk ended in CR, so an LF opening the next one ends nothing. */
  #afterCr = false;
  #usage: Usage | undefined;
  /** The `[DONE]` event came: the stream's last, after its usage. */
  complete = false;

  constructor(maxBytes: number) {
    // Decoded text has at most one UTF-16 code unit per UTF-8 byte.
    this.#maxChars = maxBytes;
  }

  push(chunk: Uint8Array): void {
    const text = this.#decoder.decode(chunk, { stream: true });
    let start = this.#afterCr && text.startsWith("\n") ? 1 : 0;
    this.#afterCr = false;
    while (start < text.length && !this.complete) {
      const end = lineEnd(text, start);
      if (end === -1) {
        this.#keepPartial(text.slice(start));
        return;
      }
      this.#endLine(text.slice(start, end));
      if (text[end] === "\n") start = end + 1;
      else if (end + 1 === text.length) this.#afterCr = true;
      else start = text[end + 1] === "\n" ? end + 2 : end + 1;
      if (this.#afterCr) return;
    }
  }

  end(): Usage | undefined {
    // An event the stream cut before its blank line is not dispatched.
    return this.#usage;
  }

  #keepPartial(text: string): void {
    if (this.#oversized) {
      // Its content is not needed, only that it is not blank.
      this.#lineDropped = true;
      return;
    }
    this.#partial += text;
    if (this.#partial.length + this.#data.length > this.#maxChars) {
      this.#dropEvent();
    }
  }

  #endLine(tail: string): void {
    const line = this.#partial + tail;
    const dropped = this.#lineDropped;
    this.#partial = "";
    this.#lineDropped = false;
    // The end of a dropped line is not a blank line, even when nothing follows the cut.
    if (!dropped) this.#line(line);
  }

  #line(line: string): void {
    if (line === "") {
      if (!this.#oversized && this.#data !== "") {
        this.#dispatch(this.#data.slice(0, -1));
      }
      this.#data = "";
      this.#oversized = false;
      return;
    }
    if (this.#oversized) return;
    const value = dataValue(line);
    if (value === undefined) return;
    this.#data += value + "\n";
    if (this.#data.length > this.#maxChars) this.#dropEvent();
  }

  #dropEvent(): void {
    this.#oversized = true;
    this.#lineDropped = this.#partial !== "";
    this.#partial = "";
    this.#data = "";
  }

  #dispatch(data: string): void {
    if (data === "[DONE]") {
      this.complete = true;
      return;
    }
    const usage = parseUsage(data);
    if (usage !== undefined) this.#usage = usage;
  }
}

/** The index of the CR or LF that ends the line starting at `start`, or -1. */
function lineEnd(text: string, start: number): number {
  const lf = text.indexOf("\n", start);
  const cr = text.indexOf("\r", start);
  if (cr === -1) return lf;
  return lf === -1 ? cr : Math.min(cr, lf);
}

/** The value of a `data` field line, or `undefined` for any other line. */
function dataValue(line: string): string | undefined {
  if (!line.startsWith("data")) return undefined;
  if (line.length === 4) return "";
  if (line[4] !== ":") return undefined;
  return line[5] === " " ? line.slice(6) : line.slice(5);
}
