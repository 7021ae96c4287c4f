/**
 * Adapters around `fetch` for servers whose answers do not fit the shared
 * `fetchJson` as they are: a status that means "the server rejects this
 * request", and JSON arrays where `fetchJson` reads objects.
 *
 * @module
 */
import { TemplateRejectedError } from "../../core/errors.ts";

type Fetch = typeof globalThis.fetch;

/**
 * A fetch that answers `status` with a {@linkcode TemplateRejectedError}
 * carrying `message`: the count endpoint parses the request as the
 * generation endpoint does, so that endpoint would reject it too. The body
 * is cancelled unread, as it may quote the prompt.
 */
export function rejectingFetch(
  fetch: Fetch | undefined,
  status: number,
  message: string,
): Fetch {
  return async (input, init) => {
    const response = await (fetch ?? globalThis.fetch)(input, init);
    if (response.status !== status) return response;
    await response.body?.cancel().catch(() => {});
    throw serverRejects(message);
  };
}

/** A TemplateRejectedError whose message names the server's own rule. */
export function serverRejects(message: string): TemplateRejectedError {
  const error = new TemplateRejectedError();
  error.message = message;
  return error;
}

/**
 * A fetch whose successful answers are framed as `{"<field>": <body>}` as
 * they stream in, unread: an endpoint answering a JSON array then passes
 * through `fetchJson` (which reads only objects, within its size cap) and
 * the array is read from `field`.
 */
export function framingFetch(fetch: Fetch | undefined, field: string): Fetch {
  const head = new TextEncoder().encode(`{${JSON.stringify(field)}:`);
  const tail = new TextEncoder().encode("}");
  return async (input, init) => {
    const response = await (fetch ?? globalThis.fetch)(input, init);
    if (!response.ok || response.body === null) return response;
    const headers = new Headers(response.headers);
    const length = headers.get("content-length");
    if (length !== null) {
      headers.set(
        "content-length",
        String(Number(length) + head.length + tail.length),
      );
    }
    const framed = response.body.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        start(controller) {
          controller.enqueue(head);
        },
        flush(controller) {
          controller.enqueue(tail);
        },
      }),
    );
    return new Response(framed, { status: response.status, headers });
  };
}
