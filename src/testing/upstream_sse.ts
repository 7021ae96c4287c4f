/**
 * What the fake upstream answers and how it goes on the wire: a generation
 * request read as vLLM reads it (prompt, output cap, length checks), its
 * OpenAI-compatible body or server-sent events (paced, or cut short), and
 * vLLM's error objects.
 *
 * @module
 */

import { type FakeToolCall, toolCallFor } from "./tool_calls.ts";

/** A JSON object, as the fake parses a request body. */
export type JsonBody = { readonly [key: string]: unknown };

/** The generation APIs the fake answers. */
export type GenerationKind = "chat" | "text" | "responses";

/** One finished generation, before it is put on the wire. */
export interface Generation {
  readonly kind: GenerationKind;
  readonly id: string;
  readonly created: number;
  readonly model: string;
  readonly text: string;
  readonly finishReason: "stop" | "length" | "tool_calls";
  readonly promptTokens: number;
  readonly completionTokens: number;
  /** A chat answer that calls a tool instead of `text`. */
  readonly toolCall?: FakeToolCall;
}

/** Waits `ms` milliseconds, or less once `signal` aborts; never rejects. */
export type Sleep = (ms: number, signal: AbortSignal) => Promise<void>;

/** How a body is delivered. */
export interface Delivery {
  /** The pause between parts; no timer runs at 0. */
  readonly chunkDelayMs: number;
  /** Whether the body fails part-way, as a cut connection does. */
  readonly cut: boolean;
  /** Ends the body early (as a failed read) once aborted. */
  readonly signal: AbortSignal;
  readonly sleep: Sleep;
}

/** How a body is paced and where, if anywhere, it is cut short. */
interface Pacing extends Omit<Delivery, "cut"> {
  /** The number of parts sent before the body errors, or `undefined`. */
  readonly cutAfter: number | undefined;
}

type Json = Record<string, unknown>;

const encoder = new TextEncoder();

/** The `(ms, signal)` sleep on a real timer, cleared once `signal` aborts. */
export function timerSleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done(): void {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    }
    signal.addEventListener("abort", done, { once: true });
  });
}

/** Puts a generation on the wire: JSON or SSE, whole or cut short. */
export function deliver(
  generation: Generation,
  body: JsonBody,
  delivery: Delivery,
): Response {
  const { cut, ...pacing } = delivery;
  if (body.stream === true) {
    const options = isObject(body.stream_options) ? body.stream_options : {};
    const events = generationEvents(generation, options.include_usage === true);
    // Cut halfway: after some content, before the finish and the usage.
    const cutAfter = cut ? Math.floor(events.length / 2) : undefined;
    return eventStreamResponse(events, { ...pacing, cutAfter });
  }
  const json = generationJson(generation);
  return cut
    ? cutJsonResponse(json, { ...pacing, cutAfter: 1 })
    : Response.json(json);
}

/** The non-streamed body of `generation`. */
function generationJson(generation: Generation): Json {
  switch (generation.kind) {
    case "chat":
      return chatJson(generation);
    case "text":
      return textJson(generation);
    default:
      return responseJson(generation, "completed");
  }
}

/** The SSE events of `generation`, each a complete `data:` block. */
function generationEvents(
  generation: Generation,
  includeUsage: boolean,
): string[] {
  switch (generation.kind) {
    case "chat":
      return chatEvents(generation, includeUsage);
    case "text":
      return textEvents(generation, includeUsage);
    default:
      return responseEvents(generation);
  }
}

/** The error body of {@linkcode upstreamError}, besides its status. */
export interface UpstreamErrorOptions {
  /** The exception's class name, such as `"BadRequestError"`. */
  readonly type: string;
  readonly message: string;
  /**
   * The request field at fault.
   *
   * @default {null}
   */
  readonly param?: string | null;
}

/** An error in the shape vLLM's OpenAI server answers with. */
export function upstreamError(
  status: number,
  options: UpstreamErrorOptions,
): Response {
  const { type, message, param = null } = options;
  return Response.json(
    { error: { message, type, param, code: status } },
    { status },
  );
}

/** A `text/event-stream` response that sends `events` as `pacing` says. */
function eventStreamResponse(
  events: readonly string[],
  pacing: Pacing,
): Response {
  return new Response(paced(events, pacing), {
    headers: {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-cache",
    },
  });
}

/** A JSON response whose body errors after its first half. */
function cutJsonResponse(json: Json, pacing: Pacing): Response {
  const text = JSON.stringify(json);
  const half = Math.floor(text.length / 2);
  const parts = [text.slice(0, half), text.slice(half)];
  return new Response(paced(parts, pacing), {
    headers: { "content-type": "application/json" },
  });
}

/**
 * A lazy body: each part is produced only when the reader asks, so no timer
 * outlives a reader that cancels.
 */
function paced(
  parts: readonly string[],
  pacing: Pacing,
): ReadableStream<Uint8Array> {
  const { chunkDelayMs, cutAfter, signal, sleep } = pacing;
  const cancelled = new AbortController();
  const stop = AbortSignal.any([signal, cancelled.signal]);
  let index = 0;
  return new ReadableStream<Uint8Array>({
    async pull(controller): Promise<void> {
      if (index > 0 && chunkDelayMs > 0) await sleep(chunkDelayMs, stop);
      if (cancelled.signal.aborted) return;
      if (signal.aborted) return controller.error(signal.reason);
      if (index === cutAfter) {
        // Not an AbortError: clients treat those as their own cancellation.
        return controller.error(
          new TypeError("The fake upstream cut the response short"),
        );
      }
      controller.enqueue(encoder.encode(parts[index++]));
      if (index === parts.length) controller.close();
    },
    cancel(reason): void {
      cancelled.abort(reason);
    },
  });
}

/** Splits after each whitespace, losslessly: "a b" -> ["a ", "b"]. */
function pieces(text: string): string[] {
  return text.split(/(?<=\s)/).filter((piece) => piece !== "");
}

function data(json: Json): string {
  return `data: ${JSON.stringify(json)}\n\n`;
}

function usage(generation: Generation): Json {
  const { promptTokens, completionTokens } = generation;
  return {
    prompt_tokens: promptTokens,
    total_tokens: promptTokens + completionTokens,
    completion_tokens: completionTokens,
    prompt_tokens_details: null,
  };
}

function chatJson(generation: Generation): Json {
  const { id, created, model, text, finishReason, toolCall } = generation;
  const message = toolCall === undefined
    ? { role: "assistant", content: text, tool_calls: [] }
    : {
      role: "assistant",
      content: null,
      tool_calls: [{
        id: toolCall.id,
        type: "function",
        function: { name: toolCall.name, arguments: toolCall.arguments },
      }],
    };
  return {
    id,
    object: "chat.completion",
    created,
    model,
    choices: [{
      index: 0,
      message,
      logprobs: null,
      finish_reason: finishReason,
      stop_reason: null,
    }],
    usage: usage(generation),
    prompt_logprobs: null,
  };
}

function chatEvents(generation: Generation, includeUsage: boolean): string[] {
  const { id, created, model } = generation;
  const chunk = (choices: Json[], extra: Json = {}) =>
    data({
      id,
      object: "chat.completion.chunk",
      created,
      model,
      choices,
      ...extra,
    });
  const choice = (delta: Json, finish: string | null = null) => ({
    index: 0,
    delta,
    logprobs: null,
    finish_reason: finish,
  });
  const { toolCall } = generation;
  const body = toolCall === undefined
    ? pieces(generation.text).map((content) => chunk([choice({ content })]))
    : [
      chunk([choice({
        tool_calls: [{
          index: 0,
          id: toolCall.id,
          type: "function",
          function: { name: toolCall.name, arguments: "" },
        }],
      })]),
      chunk([choice({
        tool_calls: [{ index: 0, function: { arguments: toolCall.arguments } }],
      })]),
    ];
  return [
    chunk([choice({ role: "assistant", content: "" })]),
    ...body,
    chunk([choice({}, generation.finishReason)]),
    ...(includeUsage ? [chunk([], { usage: usage(generation) })] : []),
    "data: [DONE]\n\n",
  ];
}

function textJson(generation: Generation): Json {
  const { id, created, model, text, finishReason } = generation;
  return {
    id,
    object: "text_completion",
    created,
    model,
    choices: [{
      index: 0,
      text,
      logprobs: null,
      finish_reason: finishReason,
      stop_reason: null,
    }],
    usage: usage(generation),
  };
}

function textEvents(generation: Generation, includeUsage: boolean): string[] {
  const { id, created, model } = generation;
  const chunk = (choices: Json[], extra: Json = {}) =>
    data({ id, object: "text_completion", created, model, choices, ...extra });
  const choice = (text: string, finish: string | null = null) => ({
    index: 0,
    text,
    logprobs: null,
    finish_reason: finish,
  });
  return [
    ...pieces(generation.text).map((text) => chunk([choice(text)])),
    chunk([choice("", generation.finishReason)]),
    ...(includeUsage ? [chunk([], { usage: usage(generation) })] : []),
    "data: [DONE]\n\n",
  ];
}

function message(generation: Generation, status: string): Json {
  const content = status === "in_progress"
    ? []
    : [{ type: "output_text", text: generation.text, annotations: [] }];
  return {
    id: `msg_${generation.id}`,
    type: "message",
    status,
    role: "assistant",
    content,
  };
}

function responseJson(generation: Generation, status: string): Json {
  const { id, created, model, promptTokens, completionTokens } = generation;
  const done = status !== "in_progress";
  const incomplete = done && generation.finishReason === "length";
  return {
    id,
    object: "response",
    created_at: created,
    status: incomplete ? "incomplete" : status,
    model,
    output: done ? [message(generation, "completed")] : [],
    incomplete_details: incomplete ? { reason: "max_output_tokens" } : null,
    error: null,
    usage: done
      ? {
        input_tokens: promptTokens,
        input_tokens_details: { cached_tokens: 0 },
        output_tokens: completionTokens,
        output_tokens_details: { reasoning_tokens: 0 },
        total_tokens: promptTokens + completionTokens,
      }
      : null,
  };
}

function responseEvents(generation: Generation): string[] {
  const item = { item_id: `msg_${generation.id}`, output_index: 0 };
  const part = { ...item, content_index: 0 };
  const { text } = generation;
  const textPart = { type: "output_text", text, annotations: [] };
  const events: Json[] = [
    {
      type: "response.created",
      response: responseJson(generation, "in_progress"),
    },
    {
      type: "response.in_progress",
      response: responseJson(generation, "in_progress"),
    },
    {
      type: "response.output_item.added",
      output_index: 0,
      item: message(generation, "in_progress"),
    },
    {
      type: "response.content_part.added",
      ...part,
      part: { ...textPart, text: "" },
    },
    ...pieces(text).map((delta) => ({
      type: "response.output_text.delta",
      ...part,
      delta,
      logprobs: [],
    })),
    { type: "response.output_text.done", ...part, text, logprobs: [] },
    { type: "response.content_part.done", ...part, part: textPart },
    {
      type: "response.output_item.done",
      output_index: 0,
      item: message(generation, "completed"),
    },
    { type: "response.completed", response: generationJson(generation) },
  ];
  return events.map((event, sequence_number) =>
    `event: ${event.type}\n${data({ ...event, sequence_number })}`
  );
}

/** What reading a request needs from the fake. */
export interface Planner {
  readonly model: string;
  readonly maxModelLen: number;
  readonly reply: (body: JsonBody) => string;
  /** Counts a `/tokenize` body, chat form or text form. */
  readonly count: (form: JsonBody) => Promise<number>;
  /** Every how many user turns a chat request that offers tools gets a tool call. */
  readonly toolCallEvery?: number | undefined;
}

/** The keys of a chat body that vLLM's `/tokenize` chat form also takes. */
const CHAT_FORM_KEYS = [
  "model",
  "messages",
  "tools",
  "add_generation_prompt",
  "continue_final_message",
  "chat_template",
  "chat_template_kwargs",
  "documents",
  "mm_processor_kwargs",
];

/** Options for {@linkcode plan}. */
export interface PlanOptions {
  /** What reading the request needs from the fake. */
  readonly planner: Planner;
  /** The request's number, which ends the generation's id. */
  readonly serial: number;
}

/**
 * Reads a generation request as vLLM would: the generation it answers, or
 * the 400 it answers instead.
 */
export async function plan(
  kind: GenerationKind,
  body: unknown,
  options: PlanOptions,
): Promise<Generation | Response> {
  const { planner, serial } = options;
  if (!isObject(body)) {
    return badRequest("The request body must be a JSON object");
  }
  const form = promptForm(kind, body);
  if (typeof form === "string") return badRequest(form);
  const cap = outputCap(kind, body);
  if (typeof cap === "string") return badRequest(cap, "max_tokens");
  const promptTokens = typeof form === "number"
    ? form
    : await planner.count(form);
  const tooLong = lengthError(promptTokens, cap, planner.maxModelLen);
  if (tooLong !== undefined) return tooLong;
  const base = {
    kind,
    id: `${ID_PREFIX[kind]}${serial}`,
    created: Math.floor(Date.now() / 1000),
    model: typeof body.model === "string" ? body.model : planner.model,
    promptTokens,
  };
  const toolCall = kind === "chat"
    ? toolCallFor(body, { every: planner.toolCallEvery, serial })
    : undefined;
  if (toolCall !== undefined) {
    const called = tokensOf(toolCall.name + toolCall.arguments);
    // A call the cap cuts is no call: the text it would have been ends there.
    if (cap === undefined || called <= cap) {
      return {
        ...base,
        text: "",
        finishReason: "tool_calls",
        completionTokens: called,
        toolCall,
      };
    }
  }
  const reply = planner.reply(body);
  const cut = cap !== undefined && tokensOf(reply) > cap;
  const text = cut ? reply.slice(0, cap * 4) : reply;
  return {
    ...base,
    text,
    finishReason: cut ? "length" : "stop",
    completionTokens: tokensOf(text),
  };
}

/** The default reply: short, and saying what it saw. */
export function defaultReply(body: JsonBody): string {
  if (Array.isArray(body.messages)) {
    return `Noted: ${body.messages.length} messages.`;
  }
  if (body.input !== undefined) {
    const items = Array.isArray(body.input) ? body.input.length : 1;
    return `Noted: ${items} input items.`;
  }
  const prompt = typeof body.prompt === "string" ? body.prompt : "";
  return `Noted: ${prompt.length} characters.`;
}

function isObject(value: unknown): value is JsonBody {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

const ID_PREFIX: Readonly<Record<GenerationKind, string>> = {
  chat: "chatcmpl-fake-",
  text: "cmpl-fake-",
  responses: "resp_fake_",
};

/** A deterministic stand-in for a tokenizer's count of generated text. */
function tokensOf(text: string): number {
  return Math.ceil(text.length / 4);
}

function badRequest(message: string, param: string | null = null): Response {
  return upstreamError(400, { type: "BadRequestError", message, param });
}

/**
 * The `/tokenize` body that counts the prompt, a count when the prompt is
 * token ids already, or why vLLM would answer 400.
 */
function promptForm(
  kind: GenerationKind,
  body: JsonBody,
): JsonBody | number | string {
  if (kind === "chat") {
    if (!Array.isArray(body.messages)) {
      return "Field required: 'messages' must be a list";
    }
    const form = Object.fromEntries(
      CHAT_FORM_KEYS.filter((key) => body[key] !== undefined).map((
        key,
      ) => [key, body[key]]),
    );
    return {
      ...form,
      add_generation_prompt: body.add_generation_prompt ?? true,
    };
  }
  if (kind === "text") {
    const prompt = Array.isArray(body.prompt) && body.prompt.length === 1
      ? body.prompt[0]
      : body.prompt;
    if (typeof prompt === "string") return { ...pick(body, "model"), prompt };
    if (
      Array.isArray(prompt) && prompt.every((id) => Number.isSafeInteger(id))
    ) return prompt.length;
    return "Field required: 'prompt' must be a string or a list of token ids";
  }
  const { input, instructions } = body;
  if (typeof input !== "string" && !Array.isArray(input)) {
    return "Field required: 'input' must be a string or a list";
  }
  const system = typeof instructions === "string"
    ? [{ role: "system", content: instructions }]
    : [];
  const items = typeof input === "string"
    ? [{ role: "user", content: input }]
    : input;
  return {
    ...pick(body, "model"),
    messages: [...system, ...items],
    ...pick(body, "tools"),
    add_generation_prompt: true,
  };
}

function pick(body: JsonBody, key: string): JsonBody {
  return body[key] === undefined ? {} : { [key]: body[key] };
}

/** The output cap the request asks for, `undefined` for none, or why it is invalid. */
function outputCap(
  kind: GenerationKind,
  body: JsonBody,
): number | undefined | string {
  const cap = kind === "chat"
    ? body.max_completion_tokens ?? body.max_tokens
    : kind === "text"
    ? body.max_tokens
    : body.max_output_tokens;
  if (cap === undefined || cap === null) return undefined;
  if (typeof cap === "number" && Number.isSafeInteger(cap) && cap >= 1) {
    return cap;
  }
  return `max_tokens must be at least 1, got ${JSON.stringify(cap)}.`;
}

/** vLLM's 400 when prompt and output do not fit `max_model_len`. */
function lengthError(
  prompt: number,
  cap: number | undefined,
  maxModelLen: number,
): Response | undefined {
  const head =
    `This model's maximum context length is ${maxModelLen} tokens. However, `;
  if (cap === undefined) {
    // With no cap vLLM leaves max_model_len - prompt for the output: it needs at least one.
    if (prompt < maxModelLen) return undefined;
    return badRequest(
      `${head}your request has ${prompt} input tokens. Please reduce the length of the input messages.`,
      "input_tokens",
    );
  }
  if (prompt + cap <= maxModelLen) return undefined;
  return badRequest(
    `${head}you requested ${cap} output tokens and your prompt contains at least ${prompt} input tokens, for a total of at least ${
      prompt + cap
    } tokens. Please reduce the length of the input prompt or the number of requested output tokens.`,
    "input_tokens",
  );
}
