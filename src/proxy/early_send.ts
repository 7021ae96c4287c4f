/**
 * A long request's body sent upstream while its prompt is counted. Writing
 * a body of hundreds of kilobytes to the upstream's socket takes about as
 * long as the count itself, so the two overlap: the body leaves at once,
 * all but its cap (`max_tokens`, `max_completion_tokens` or
 * `max_output_tokens`), and the decision, once made, writes the cap and
 * what follows. A body whose one cap is a plain integer past its middle
 * (where the openai Python SDK writes it, after the messages) goes as it came up
 * to that number, and the decision's cap takes the number's place, padded
 * with spaces: the same length, and the same bytes when the cap is kept.
 * Any other body is written again without its caps, which the decision
 * writes as the object's last members in a tail of fixed width. Either
 * way the upstream reads the JSON object the decision would have sent
 * (JSON allows spaces before a delimiter), under a `content-length` known
 * from the start. When the decision sends anything else (a refusal, or a
 * change beyond the caps) the body is withdrawn: the stream errors before
 * its last bytes, the connection is closed, and the upstream, which never
 * had a whole request, answers nothing.
 *
 * @module
 */
import { isJsonObject, type JsonObject } from "../core/request.ts";
import { CAP_FIELDS } from "../core/caps.ts";
import { jsonMembers } from "./json_members.ts";
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
 * Starts `request`'s body before its decision, or returns undefined when it
 * cannot be sent exactly: a body that is not UTF-8 JSON text (`bytes` begin
 * elsewhere than at `{`, or hold UTF-16), or one that must be written again
 * and holds numbers JavaScript cannot hold or nesting too deep to write.
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
  // UTF-8 with no byte order mark, as the scan and the writer both need.
  if (bytes[0] !== 0x7b || bytes[1] === 0) return undefined;
  return inPlace(request, bytes) ?? rewritten(request, text);
}

/**
 * The body as it came up to its one cap, a plain integer written after
 * at least half of the body (where the openai Python SDK writes it: after
 * the messages). The decision's cap then takes the number's
 * place, padded with spaces, and the rest follows: the body keeps its
 * length, and a cap the decision keeps leaves it byte for byte.
 */
function inPlace(
  request: JsonObject,
  bytes: Uint8Array,
): EarlyBody | undefined {
  const present = CAP_FIELDS.filter((field) => Object.hasOwn(request, field));
  if (present.length !== 1) return undefined;
  const alias = present[0]!;
  // A key written with escapes, or twice, is not found once as written.
  const caps = jsonMembers(bytes)?.filter((member) =>
    capAlias(member.rawKey) !== undefined
  );
  if (caps?.length !== 1) return undefined;
  const cap = caps[0]!;
  if (capAlias(cap.rawKey) !== alias || cap.start < bytes.length / 2) {
    return undefined;
  }
  const width = cap.end - cap.start;
  for (let at = cap.start; at < cap.end; at++) {
    if (bytes[at]! < 0x30 || bytes[at]! > 0x39) return undefined;
  }
  return started(bytes.subarray(0, cap.start), bytes.length, (sent) => {
    if (!isJsonObject(sent) || !sameBesideCaps(request, sent)) return;
    const aliases = CAP_FIELDS.filter((field) => Object.hasOwn(sent, field));
    if (aliases.length !== 1 || aliases[0] !== alias) return;
    const value = sent[alias];
    if (value === request[alias]) return bytes.subarray(cap.start);
    if (typeof value !== "number" || !Number.isSafeInteger(value)) return;
    const written = String(value);
    if (value < 0 || written.length > width) return;
    const tail = new Uint8Array(bytes.length - cap.start);
    tail.set(encoder.encode(written.padEnd(width, " ")));
    tail.set(bytes.subarray(cap.end), width);
    return tail;
  });
}

/**
 * The body written again without its caps, which the decision writes as
 * the object's last members in a tail of fixed width.
 */
function rewritten(
  request: JsonObject,
  text: string,
): EarlyBody | undefined {
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
  return started(
    head,
    head.byteLength + EARLY_TAIL_BYTES,
    (sent) => capTail(request, sent, members > 0),
  );
}

/**
 * A body whose `head` goes at once and whose tail, `tailFor` the decided
 * object, ends it: `length` bytes in all. A decision without a tail
 * withdraws it.
 */
function started(
  head: Uint8Array,
  length: number,
  tailFor: (sent: JsonObject) => Uint8Array | undefined,
): EarlyBody {
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
    length,
    settled,
    commit(sent) {
      if (!open) return false;
      const tail = tailFor(sent);
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

/** The cap alias a top-level key written as `rawKey` names, if any. */
function capAlias(rawKey: Uint8Array): string | undefined {
  for (const [alias, written] of WRITTEN_CAPS) {
    if (
      rawKey.byteLength === written.byteLength &&
      rawKey.every((byte, at) => byte === written[at])
    ) return alias;
  }
  return undefined;
}

/** Each cap alias as a key is written plainly, quotes included. */
const WRITTEN_CAPS: readonly (readonly [string, Uint8Array])[] = CAP_FIELDS
  .map((field) => [field, encoder.encode(`"${field}"`)]);

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
