/**
 * Hostile request bodies for the proxy and the library bridges, each with
 * what must happen to it: a 4xx from incontext with a clear message, or the
 * request forwarded (unchanged, or budgeted with nothing but its cap
 * rewritten).
 */
import { ok, strictEqual } from "node:assert/strict";

const encoder = new TextEncoder();

/** What must happen to a hostile body. */
export type Expect =
  | { readonly reject: number; readonly code: string; readonly message: RegExp }
  | "forward"
  /** Forwarded byte for byte, never rewritten. */
  | "verbatim";

/** One hostile body. */
export interface HostileCase {
  readonly name: string;
  readonly bytes: Uint8Array<ArrayBuffer>;
  readonly expect: Expect;
  /** Whether the body parses to a JSON object, so budget() can take it. */
  readonly object: boolean;
}

const user = (content: unknown) => ({ role: "user", content });
const VALID = { model: "m", messages: [user("hi")] };

function nested(depth: number): unknown {
  let value: unknown = "deep";
  for (let i = 0; i < depth; i++) value = i % 2 ? [value] : { a: value };
  return value;
}

function bytes(text: string): Uint8Array<ArrayBuffer> {
  return encoder.encode(text);
}

/** Valid JSON text of a chat body, with raw bytes spliced into its content. */
function withRawBytes(raw: number[]): Uint8Array<ArrayBuffer> {
  const [head, tail] = JSON.stringify({ model: "m", messages: [user("@")] })
    .split("@");
  return new Uint8Array([...bytes(head!), ...raw, ...bytes(tail!)]);
}

const invalidJson = {
  reject: 400,
  code: "invalid_json",
  message: /not valid JSON/,
};
const notObject = {
  reject: 400,
  code: "invalid_json",
  message: /not a JSON object/,
};
const notUtf8 = {
  reject: 400,
  code: "invalid_json",
  message: /not valid UTF-8/,
};
const tooLong = {
  reject: 400,
  code: "context_length_exceeded",
  message: /^This model's maximum context length is \d+ tokens/,
};

function json(name: string, body: unknown, expect: Expect = "forward") {
  return { name, bytes: bytes(JSON.stringify(body)), expect, object: true };
}

function text(name: string, body: string, expect: Expect, object = false) {
  return { name, bytes: bytes(body), expect, object };
}

/** The byte limit the cases are built around. */
export const MAX_REQUEST_BYTES = 8 * 1024 * 1024;

/** Every hostile body, in the order the tests send them. */
export function hostileCases(): HostileCase[] {
  const valid = JSON.stringify(VALID);
  return [
    text("malformed JSON", '{"messages": [', invalidJson),
    text("truncated JSON", valid.slice(0, valid.length - 7), invalidJson),
    text("an empty body", "", invalidJson),
    // Python's json.loads (vLLM's reading) skips a UTF-8 byte order mark.
    text("a byte-order mark before the JSON", `\ufeff${valid}`, "forward"),
    text("a JSON array", "[]", notObject),
    text("a JSON string", '"hi"', notObject),
    text("JSON null", "null", notObject),
    text("a JSON number", "42", notObject),
    {
      name: "invalid UTF-8: a stray 0xff",
      bytes: withRawBytes([0xff]),
      expect: notUtf8,
      object: false,
    },
    {
      name: "invalid UTF-8: an overlong '/'",
      bytes: withRawBytes([0xc0, 0xaf]),
      expect: notUtf8,
      object: false,
    },
    {
      // Read as Python's surrogatepass reads it; its cap cannot be written
      // again without joining what Python keeps apart.
      name: "a surrogate encoded alone",
      bytes: withRawBytes([0xed, 0xa0, 0x80]),
      expect: "verbatim",
      object: true,
    },
    {
      name: "invalid UTF-8: a cut sequence",
      bytes: withRawBytes([0xe2, 0x82]),
      expect: notUtf8,
      object: false,
    },
    json("messages as a string", { model: "m", messages: "hi" }),
    json("messages null", { model: "m", messages: null }),
    json("messages of every type", {
      model: "m",
      messages: [null, 5, "x", [], {}, true],
    }),
    json("roles and contents of wrong types", {
      model: "m",
      messages: [{ role: 5, content: { a: 1 } }, { role: null, content: 7 }],
    }),
    json("numbers as strings", {
      ...VALID,
      max_tokens: "100",
      temperature: "0.5",
      n: "1",
      top_p: "1",
    }),
    json("nulls in every field", {
      model: null,
      messages: [{ role: "user", content: null, name: null }],
      max_tokens: null,
      max_completion_tokens: null,
      tools: null,
      stream: null,
      stream_options: null,
      extra_body: null,
    }),
    json("a negative cap", { ...VALID, max_tokens: -5 }),
    json("a fractional cap", { ...VALID, max_tokens: 1.5 }),
    json("a cap beyond 2^53", { ...VALID, max_tokens: 1e300 }),
    json("a boolean cap", { ...VALID, max_completion_tokens: true }),
    json("an object cap", { ...VALID, max_tokens: { value: 5 } }),
    json("a numeric model, string stream", {
      ...VALID,
      model: 5,
      stream: "yes",
      stream_options: "x",
    }),
    json("tools and extra_body of wrong types", {
      ...VALID,
      tools: "x",
      tool_choice: 5,
      extra_body: "x",
    }),
    json("tool arguments that are not JSON", {
      model: "m",
      messages: [
        {
          role: "assistant",
          content: null,
          tool_calls: [{
            id: "1",
            type: "function",
            function: { name: "f", arguments: '{"a": [1, ' },
          }],
        },
        { role: "tool", tool_call_id: "1", content: "x" },
      ],
    }),
    json("100-level nesting", { model: "m", messages: [user(nested(100))] }),
    json("10,000-level nesting", {
      model: "m",
      messages: [user(nested(10_000))],
    }),
    // The rewrite builds its copy (no `delete`), so even this serialises.
    json("10,000-level nesting with a cap", {
      model: "m",
      max_tokens: 100,
      messages: [user(nested(10_000))],
    }),
    text(
      "prototype-pollution keys",
      '{"__proto__":{"polluted":true,"max_tokens":1},"constructor":{"prototype":{"polluted":true}},"model":"m","messages":[{"role":"user","content":"hi","__proto__":{"polluted":true}}]}',
      "forward",
      true,
    ),
    text(
      "a 64-bit seed and a value beyond a double",
      '{"model":"m","seed":12345678901234567890,"temperature":1e400,"messages":[{"role":"user","content":"hi"}],"max_tokens":100}',
      "verbatim",
      true,
    ),
    json(
      "100,000 messages",
      {
        model: "m",
        messages: Array.from({ length: 100_000 }, (_, i) => user(`m${i}`)),
      },
      tooLong,
    ),
    json(
      "a million-character message",
      { model: "m", messages: [user("x".repeat(1_000_000))] },
      tooLong,
    ),
  ];
}

const CAPS = ["max_tokens", "max_completion_tokens", "max_output_tokens"];

// Not `delete`: an object that lost a property is serialised recursively,
// and the 10,000-level case overflows the stack then.
function withoutCaps(value: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(value).filter(([key]) => !CAPS.includes(key)),
  );
}

const decoder = new TextDecoder();

/**
 * Asserts that `forwarded` is `sent` unchanged, or (unless `verbatim`) `sent`
 * with only its cap rewritten to a positive integer no larger than `limit`.
 */
export function assertForwarded(
  sent: Uint8Array,
  forwarded: Uint8Array | string,
  expect: Expect,
  limit: number,
): void {
  const got = typeof forwarded === "string"
    ? forwarded
    : decoder.decode(forwarded);
  const want = decoder.decode(sent);
  if (got === want) return;
  ok(expect === "forward", "a verbatim body was rewritten");
  const rewritten = JSON.parse(got);
  const original = JSON.parse(want);
  // Text, not deepStrictEqual: the 10,000-level case is deeper than its stack.
  strictEqual(
    JSON.stringify(withoutCaps(rewritten)),
    JSON.stringify(withoutCaps(original)),
  );
  for (const cap of CAPS) {
    if (cap in rewritten) {
      const value = rewritten[cap];
      ok(
        Number.isSafeInteger(value) && value >= 1 && value <= limit,
        `${cap}: ${value}`,
      );
    }
  }
}

/**
 * Raw requests a proxy must refuse (or close) without forwarding anything:
 * the framing and header shapes request smuggling is made of, each a chat
 * POST to `path` with `body`.
 */
export function smugglingRequests(
  path: string,
  body: string,
): [name: string, request: string][] {
  const post = (headers: string, payload = body) =>
    `POST ${path} HTTP/1.1\r\nHost: proxy\r\nContent-Type: application/json\r\n${headers}\r\n\r\n${payload}`;
  return [
    [
      "a folded header line",
      post(`X-A: a\r\n injected: b\r\nContent-Length: ${body.length}`),
    ],
    [
      "Content-Length with Transfer-Encoding",
      post("Content-Length: 5\r\nTransfer-Encoding: chunked", "0\r\n\r\n"),
    ],
    [
      "two Content-Lengths",
      post(`Content-Length: ${body.length}\r\nContent-Length: 3`),
    ],
    ["a NUL in a value", post(`X-A: a\0b\r\nContent-Length: ${body.length}`)],
    [
      "a bare CR in a value",
      post(`X-A: a\rInjected: b\r\nContent-Length: ${body.length}`),
    ],
    ["a space in a name", post(`X A: b\r\nContent-Length: ${body.length}`)],
    ["a negative Content-Length", post("Content-Length: -1")],
  ];
}
