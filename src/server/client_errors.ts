/**
 * What the HTTP/1.1 server answers a request its parser refused: a
 * whole HTTP/1.1 message that closes the connection and never repeats what
 * the client sent.
 *
 * @module
 */
import { STATUS_CODES } from "node:http";
import { type ErrorAnswer, errorResponse } from "../bridges/answers.ts";

/** What node's parser attaches to the error it reports to `clientError`. */
export interface ClientError extends Error {
  readonly code?: string;
  /** Where parsing stopped, counted from the start of `rawPacket`. */
  readonly bytesParsed?: number;
  /** The bytes being parsed when it failed. */
  readonly rawPacket?: Uint8Array;
}

/**
 * The answer to a request that could not be read, in OpenAI's error shape:
 * a method the parser does not know gets 501 (the proxy's answer to a
 * method it cannot forward), a head too large 431, a head or body too slow
 * 408, anything else 400.
 *
 * @param error What the server's `clientError` event reported.
 * @returns The status and the HTTP/1.1 message, `connection: close` included.
 */
export async function clientErrorAnswer(
  error: ClientError,
): Promise<{ readonly status: number; readonly message: string }> {
  const [status, answer] = refusal(error);
  const body = await errorResponse(status, answer).text();
  return {
    status,
    message: `HTTP/1.1 ${status} ${
      STATUS_CODES[status]
    }\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\nconnection: close\r\n\r\n${body}`,
  };
}

/** The status and the error a refused request gets. */
function refusal(error: ClientError): [number, ErrorAnswer] {
  if (unknownMethod(error)) {
    return [501, {
      code: "method_not_supported",
      message:
        "Cannot handle the request as its method is not supported by the incontext proxy",
    }];
  }
  switch (error.code) {
    case "ERR_HTTP_REQUEST_TIMEOUT":
      return [408, {
        code: "request_timeout",
        message:
          "Cannot handle the request as it was not received in time by the incontext proxy",
      }];
    case "HPE_HEADER_OVERFLOW":
      return [431, {
        code: "request_header_too_large",
        message:
          "Cannot handle the request as its header fields are larger than the incontext proxy reads; shorten them",
      }];
    default:
      return [400, {
        code: "malformed_request",
        message:
          "Cannot handle the request as it is not a well-formed HTTP/1.1 request",
      }];
  }
}

/** An RFC 9110 method token, then a request target and an HTTP version. */
const REQUEST_LINE =
  /^([!#$%&'*+.^_`|~0-9A-Za-z-]+) [^ \r\n]+ HTTP\/\d\.\d\r?$/;

/**
 * Whether the parser failed on a request line's method: a well-formed token
 * that it does not know (methods are case-sensitive, so `get` is one). node
 * says so as `HPE_INVALID_METHOD`; Deno's parser reports every error but an
 * oversized head as `HPE_ERROR`, so the line where parsing stopped is read:
 * it must be a whole request line, and parsing must have stopped inside its
 * method.
 */
function unknownMethod(error: ClientError): boolean {
  if (error.code === "HPE_INVALID_METHOD") return true;
  const { code, bytesParsed: at, rawPacket } = error;
  if (code !== "HPE_ERROR" || at === undefined || rawPacket === undefined) {
    return false;
  }
  const text = new TextDecoder("latin1").decode(rawPacket);
  const start = at === 0 ? 0 : text.lastIndexOf("\n", at - 1) + 1;
  const end = text.indexOf("\n", start);
  if (end < 0) return false;
  const method = REQUEST_LINE.exec(text.slice(start, end))?.[1];
  return method !== undefined && at < start + method.length;
}
