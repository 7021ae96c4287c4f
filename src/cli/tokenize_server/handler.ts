/**
 * The request handler of the tokenize server: vLLM's `POST /tokenize` and
 * `POST /detokenize`, answered by a {@linkcode LocalBackend} from a model
 * folder, with vLLM's wire shapes and OpenAI-style errors.
 */
import { getLogger } from "@logtape/logtape";
import type { LocalBackend } from "../../backends/local/mod.ts";
import type { JsonObject } from "../../core/request.ts";
import { CountError, TemplateRejectedError } from "../../core/errors.ts";

import { readLimited } from "../../_internal/limited_read.ts";
import { jsonText } from "../../_internal/json_bytes.ts";
import { parseJson } from "@incontext/engine/vllm";

const logger = getLogger(["incontext", "tokenize-server"]);

/** Options for {@linkcode createTokenizeHandler}. */
export interface TokenizeHandlerOptions {
  /** Renders and tokenizes; the handler does not dispose it. */
  readonly backend: LocalBackend;
  /** The `max_model_len` every answer reports: the served context length. */
  readonly maxModelLen: number;
  /**
   * Whether a request's own `chat_template` is used (vLLM's
   * `--trust-request-chat-template`); otherwise such a request gets HTTP 400.
   *
   * @default {false}
   */
  readonly trustRequestChatTemplate?: boolean;
  /**
   * The largest request body read, in bytes; a larger one gets HTTP 413
   * without being read whole.
   *
   * @default 33554432 (32 MiB)
   */
  readonly maxRequestBytes?: number;
}

/** A client error: answered with HTTP 400 and this message. */
class BadRequest extends Error {
  override readonly name = "BadRequest";
}

/** A body over the limit: answered with HTTP 413. */
class TooLarge extends Error {
  override readonly name = "TooLarge";
}

/**
 * Creates the tokenize server's handler.
 *
 * @param options The backend, the reported `max_model_len`, the template policy.
 * @returns A handler for `Deno.serve` or any `Request` -> `Response` server.
 */
export function createTokenizeHandler(
  options: TokenizeHandlerOptions,
): (request: Request) => Promise<Response> {
  const { backend, maxModelLen } = options;
  if (!Number.isSafeInteger(maxModelLen) || maxModelLen < 1) {
    throw new RangeError(
      `Cannot create the tokenize handler as 'maxModelLen' must be a positive integer: current value is ${maxModelLen}`,
    );
  }
  const trust = options.trustRequestChatTemplate ?? false;
  const { maxRequestBytes = 32 * 1024 * 1024 } = options;
  if (!Number.isSafeInteger(maxRequestBytes) || maxRequestBytes < 1) {
    throw new RangeError(
      `Cannot create the tokenize handler as 'maxRequestBytes' must be a positive integer: current value is ${maxRequestBytes}`,
    );
  }

  async function tokenize(body: JsonObject): Promise<Response> {
    if (body.chat_template != null && !trust) {
      throw new BadRequest(
        "Chat template is passed with request, but --trust-request-chat-template is not set. Refused request with untrusted chat template.",
      );
    }
    if (
      body.return_token_strs !== undefined && body.return_token_strs !== null &&
      typeof body.return_token_strs !== "boolean"
    ) {
      throw new BadRequest("'return_token_strs' must be a boolean");
    }
    const ids = await backend.tokenize(tokenizeBody(body));
    const tokenStrs = body.return_token_strs === true
      ? await backend.tokenStrings(ids)
      : null;
    return Response.json({
      count: ids.length,
      max_model_len: maxModelLen,
      tokens: ids,
      token_strs: tokenStrs,
    });
  }

  async function detokenize(body: JsonObject): Promise<Response> {
    if (!Array.isArray(body.tokens)) {
      throw new BadRequest("'tokens' must be an array of token ids");
    }
    return Response.json({ prompt: await backend.detokenize(body.tokens) });
  }

  return async function handleTokenizeRequest(request) {
    const path = new URL(request.url).pathname;
    const route = path === "/tokenize"
      ? tokenize
      : path === "/detokenize"
      ? detokenize
      : undefined;
    if (route === undefined) {
      return errorResponse(404, "NotFoundError", "Not Found");
    }
    if (request.method !== "POST") {
      return errorResponse(405, "MethodNotAllowed", "Method Not Allowed");
    }
    try {
      return await route(await readBody(request, maxRequestBytes));
    } catch (error) {
      return failure(path, error);
    }
  };
}

/** The body `LocalBackend.tokenize()` takes: chat or text form, validated. */
function tokenizeBody(body: JsonObject): JsonObject {
  if (body.messages !== undefined) {
    if (!Array.isArray(body.messages)) {
      throw new BadRequest("'messages' must be an array");
    }
    return body;
  }
  if (typeof body.prompt !== "string") {
    throw new BadRequest(
      "The request must have either 'messages' (chat form) or a 'prompt' string (text form)",
    );
  }
  return body;
}

/**
 * The body as a JSON object, read as vLLM's FastAPI routes read it (Python's
 * `json.loads` on bytes: a byte order mark, `NaN` and the infinities are
 * allowed), and never past `limit` bytes.
 */
async function readBody(request: Request, limit: number): Promise<JsonObject> {
  const declared = Number(request.headers.get("content-length") ?? "0");
  let bytes: Uint8Array | undefined;
  if (declared <= limit) {
    try {
      bytes = await readLimited(request.body, limit);
    } catch {
      throw new BadRequest("The request body could not be read in full");
    }
  }
  if (bytes === undefined) {
    await request.body?.cancel().catch(() => {});
    throw new TooLarge(
      `The request body exceeds ${limit} bytes (INCONTEXT_MAX_REQUEST_BYTES)`,
    );
  }
  const decoded = jsonText(bytes);
  let body: unknown;
  try {
    if (decoded === undefined) throw new SyntaxError("not text");
    body = parseJson(decoded.text).value;
  } catch {
    throw new BadRequest("The request body is not valid JSON");
  }
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    throw new BadRequest("The request body must be a JSON object");
  }
  return body as JsonObject;
}

function failure(path: string, error: unknown): Response {
  const type = error instanceof Error ? error.name : typeof error;
  // The error type only: messages may be derived from the request.
  logger.info("{path} refused: {errorType}", { path, errorType: type });
  if (error instanceof BadRequest) {
    return errorResponse(400, "BadRequestError", error.message);
  }
  if (error instanceof TooLarge) {
    return errorResponse(413, "RequestTooLargeError", error.message);
  }
  if (error instanceof TemplateRejectedError) {
    return errorResponse(
      400,
      "BadRequestError",
      "The chat template rejected the conversation (it raised an exception)",
    );
  }
  if (error instanceof CountError) {
    return errorResponse(400, "BadRequestError", error.message);
  }
  logger.error("{path} failed: {errorType}", { path, errorType: type });
  return errorResponse(500, "InternalServerError", "Internal Server Error");
}

/** vLLM's OpenAI-compatible error body. */
function errorResponse(
  status: number,
  type: string,
  message: string,
): Response {
  return Response.json({
    error: { message, type, param: null, code: status },
  }, { status });
}
