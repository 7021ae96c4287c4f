/**
 * When the proxy starts a long body upstream: once the body is parsed and
 * its count handed over, the send begins (see `early_send.ts` for what is
 * sent). The handler gets a hook for `decide()` and, once decided, the send
 * if it began.
 *
 * @module
 */
import { getLogger } from "@logtape/logtape";
import { clearImmediate, setImmediate } from "node:timers";
import type { JsonObject } from "../core/request.ts";
import { errorType } from "../core/error_type.ts";
import { EARLY_SEND_BYTES, type EarlyBody, earlyBody } from "./early_send.ts";
import { sendUpstream, type UpstreamAnswer } from "./upstream.ts";
import type { ProxyContext } from "./state.ts";

const logger = getLogger(["incontext", "proxy"]);

/** A long body on its way upstream while its prompt is counted. */
export interface EarlySend {
  readonly body: EarlyBody;
  /** The upstream's answer, once the body is committed. */
  readonly sending: Promise<UpstreamAnswer | Response>;
}

/** A send that may start while a body is counted. */
export interface EarlyStart {
  /** For `decide()`: called with the parsed body once its count has begun. */
  readonly whileCounting: (request: JsonObject, text: string) => void;
  /** Once decided: the send if it began; a start still waiting is cancelled. */
  stop(): EarlySend | undefined;
}

/**
 * The early start of `bytes` to `target`, or undefined when the proxy sends
 * it only once decided (early sends off, or a body under 64 KiB).
 */
export function earlyStart(
  request: Request,
  { target, bytes }: { readonly target: string; readonly bytes: Uint8Array },
  context: ProxyContext,
): EarlyStart | undefined {
  if (!context.settings.earlySend || bytes.byteLength < EARLY_SEND_BYTES) {
    return undefined;
  }
  let early: EarlySend | undefined;
  let pending: ReturnType<typeof setImmediate> | undefined;
  return {
    whileCounting(parsed, text) {
      // Once the count's own steps on this thread have handed it over: the
      // send would otherwise hold the count back.
      pending = setImmediate(() => {
        pending = undefined;
        try {
          early = start(request, { target, parsed, text, bytes }, context);
        } catch (error) {
          // Out of any request's await: a throw here would end the process.
          // The body goes once decided instead.
          logger.warn("early send not started: error={error}", {
            error: errorType(error),
          });
        }
      });
    },
    stop() {
      if (pending !== undefined) clearImmediate(pending);
      pending = undefined;
      return early;
    },
  };
}

/** Starts the body upstream, all but its cap, or returns undefined when it cannot be sent exactly. */
function start(
  request: Request,
  { target, parsed, text, bytes }: {
    readonly target: string;
    readonly parsed: JsonObject;
    readonly text: string;
    readonly bytes: Uint8Array;
  },
  context: ProxyContext,
): EarlySend | undefined {
  const body = earlyBody(parsed, text, bytes);
  if (body === undefined) return undefined;
  void body.settled.then((kept) => {
    context.state.earlySends.inc({
      outcome: kept ? "committed" : "withdrawn",
    });
  });
  const sending = sendUpstream({
    request,
    target,
    body: body.stream,
    readsAnswer: true,
    early: body,
  }, context);
  // A withdrawn send's answer is never awaited: its failure must not go
  // unhandled (which ends the process). A committed one is awaited.
  sending.catch(() => {});
  return { body, sending };
}
