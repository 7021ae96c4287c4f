/**
 * The fake upstream's tool calls: with `toolCallEvery` set to N, a chat
 * request that offers tools and ends with the N-th, 2N-th, ... user message
 * of its conversation is answered with a call of the first tool it offers,
 * with arguments `{}`. The choice reads the body alone, so the same
 * conversation always gets the same answer, and an agent loop ends: a
 * request that ends with the tool's result is answered with text.
 *
 * @module
 */

/** A request body, as the fake parses it. */
type JsonBody = { readonly [key: string]: unknown };

/** A tool call the fake answers with. */
export interface FakeToolCall {
  readonly id: string;
  readonly name: string;
  /** The arguments, as JSON text. */
  readonly arguments: string;
}

/** The tool call that answers `body`, or `undefined` for a text answer. */
export function toolCallFor(
  body: JsonBody,
  options: { readonly every: number | undefined; readonly serial: number },
): FakeToolCall | undefined {
  const { every, serial } = options;
  if (every === undefined) return undefined;
  const name = firstToolName(body.tools);
  const messages = Array.isArray(body.messages) ? body.messages : [];
  if (name === undefined || roleOf(messages.at(-1)) !== "user") {
    return undefined;
  }
  const turns = messages.filter((message) => roleOf(message) === "user").length;
  if (turns % every !== 0) return undefined;
  return { id: `call_fake_${serial}`, name, arguments: "{}" };
}

function roleOf(message: unknown): unknown {
  return typeof message === "object" && message !== null
    ? (message as JsonBody).role
    : undefined;
}

function firstToolName(tools: unknown): string | undefined {
  if (!Array.isArray(tools)) return undefined;
  const fn = (tools[0] as JsonBody | undefined)?.function;
  const name = typeof fn === "object" && fn !== null
    ? (fn as JsonBody).name
    : undefined;
  return typeof name === "string" && name !== "" ? name : undefined;
}
