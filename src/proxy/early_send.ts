/**
 * A long request's body sent upstream while its prompt is counted. Writing
 * a body of hundreds of kilobytes to the upstream's socket takes about as
 * long as the count itself, so the two overlap: the body leaves at once
 * with its cap fields (`max_tokens`, `max_completion_tokens`,
 * `max_output_tokens`) taken out,
 * and the decision, once made, writes them as a short tail of fixed width
 * that ends the body. The upstream reads the same JSON object the decision
 * would have sent, with the caps as its last members and spaces before the
 * closing brace (JSON allows both), and a `content-length` known from the
 * start. When the decision sends anything else (a refusal, or a change
 * beyond the caps) the body is withdrawn: the stream errors before its
 * last bytes, the connection is closed, and the upstream, which never had
 * a whole request, answers nothing.
 *
 * @module
 */
import { isJsonObject, type JsonObject } from "../core/request.ts";
import { CAP_FIELDS } from "../core/caps.ts";
import {
  holdsUnsafeNumber,
  numbersSurviveRewrite,
} from "../bridges/number_safety.ts";

/** From this body size on, a budgeted body is sent while it is counted. */
export const EARLY_SEND_BYTES = 64 * 1024;

/** The members the decision may still write: the caps. */
const CAPS: ReadonlySet<string> = new Set(CAP_FIELDS);

/**
 * The tail's width in bytes: all three caps at 16 digits each fit (72
 * bytes of names and punctuation, 48 of digits), with room to spare.
 */
export const EARLY_TAIL_BYTES = 128;

/** Why an early body ended before its tail. */
export class EarlySendWithdrawn extends Error {
  constructor() {
    super("The early-sent body was withdrawn by its decision");
    this.name = "EarlySendWithdrawn";
  }
}

/** A body on its way upstream whose cap fields are not yet written. */
export interface EarlyBody {
  /** The body's bytes: all but the tail at once, the tail on commit. */
  readonly stream: ReadableStream<Uint8Array>;
  /** The body's length in bytes, tail included: its `content-length`. */
  readonly length: number;
  /**
   * Resolves true once the tail is written, false once the body is
   * withdrawn: until then, nothing the upstream says is the answer.
   */
  readonly settled: Promise<boolean>;
  /**
   * Ends the body as `sent`: true when the tail is written, false (and
   * the body withdrawn) when `sent` differs from the request in more than
   * its caps or its caps do not fit the tail.
   */
  commit(sent: JsonObject): boolean;
  /** Ends the body without its tail. Harmless once settled. */
  withdraw(): void;
}

const encoder = new TextEncoder();

/**
 * Starts `request`'s body without its caps, or returns undefined when it
 * cannot be written again exactly: a body that is not UTF-8 JSON text
 * (`bytes` begin elsewhere than at `{`, or hold UTF-16), numbers that
 * JavaScript cannot hold, nesting too deep to write.
 *
 * @param request The parsed body.
 * @param text The body's text, as parsed.
 * @param bytes The body as it came.
 * @returns The early body, or undefined.
 */
export function earlyBody(
  request: JsonObject,
  text: string,
  bytes: Uint8Array,
): EarlyBody | undefined {
  // UTF-8 with no byte order mark: the text written again is UTF-8 too.
  if (bytes[0] !== 0x7b || bytes[1] === 0) return undefined;
  if (holdsUnsafeNumber(request) && !numbersSurviveRewrite(text)) {
    return undefined;
  }
  // Built, not `delete`d, and with `fromEntries`: a `"__proto__"` member
  // stays a member, and the copy keeps the shape V8 writes fastest.
  const rest = Object.fromEntries(
    Object.entries(request).filter(([key]) => !CAPS.has(key)),
  );
  const members = Object.keys(rest).length;
  let head: Uint8Array;
  try {
    // Without its closing brace: the tail ends the object.
    head = encoder.encode(JSON.stringify(rest).slice(0, -1));
  } catch {
    // Nested too deeply to write again.
    return undefined;
  }
  let body!: ReadableStreamDefaultController<Uint8Array>;
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      body = controller;
      controller.enqueue(head);
    },
  });
  let settle!: (kept: boolean) => void;
  const settled = new Promise<boolean>((resolve) => settle = resolve);
  let open = true;
  const withdraw = () => {
    if (!open) return;
    open = false;
    settle(false);
    body.error(new EarlySendWithdrawn());
  };
  return {
    stream,
    length: head.byteLength + EARLY_TAIL_BYTES,
    settled,
    commit(sent) {
      if (!open) return false;
      const tail = capTail(request, sent, members > 0);
      if (tail === undefined) {
        withdraw();
        return false;
      }
      open = false;
      try {
        body.enqueue(tail);
        body.close();
      } catch {
        // The sender stopped reading (the upstream went away): its failure
        // is the request's answer, as it would be for a body sent now.
      }
      settle(true);
      return true;
    },
    withdraw,
  };
}

/**
 * The tail that makes the body `sent`, padded to its width, or undefined
 * when `sent` differs from `request` beyond its caps or its caps do not
 * fit.
 */
function capTail(
  request: JsonObject,
  sent: JsonObject,
  afterMembers: boolean,
): Uint8Array | undefined {
  if (!isJsonObject(sent) || !sameBesideCaps(request, sent)) return undefined;
  const caps: string[] = [];
  for (const field of CAP_FIELDS) {
    if (!Object.hasOwn(sent, field)) continue;
    const value = sent[field];
    // A cap a backend wrote is a safe integer; any other value written by
    // a hook is sent only as the rewritten body would send it.
    if (typeof value !== "number" || !Number.isSafeInteger(value)) {
      if (value !== request[field]) return undefined;
    }
    let json: string | undefined;
    try {
      json = JSON.stringify(value);
    } catch {
      return undefined;
    }
    if (json === undefined) return undefined;
    caps.push(`"${field}":${json}`);
  }
  const members = caps.join(",");
  const text = afterMembers && members !== "" ? `,${members}` : members;
  const tail = encoder.encode(text);
  if (tail.byteLength > EARLY_TAIL_BYTES - 1) return undefined;
  const padded = new Uint8Array(EARLY_TAIL_BYTES).fill(0x20);
  padded.set(tail);
  padded[EARLY_TAIL_BYTES - 1] = 0x7d;
  return padded;
}

/** Whether `a` and `b` hold the same values (by identity) under the same keys, caps aside. */
function sameBesideCaps(a: JsonObject, b: JsonObject): boolean {
  let count = 0;
  for (const key of Object.keys(b)) {
    if (CAPS.has(key)) continue;
    if (!Object.hasOwn(a, key) || a[key] !== b[key]) return false;
    count++;
  }
  for (const key of Object.keys(a)) {
    if (!CAPS.has(key)) count--;
  }
  return count === 0;
}
