/**
 * What the proxy counts and remembers of each decision once it is made. Apart
 * from the handler because none of it changes what is sent.
 *
 * @module
 */
import { getLogger } from "@logtape/logtape";
import type { RequestKind } from "../core/backend.ts";
import type { Rejected, Sending } from "../bridges/decision.ts";
import {
  anchorFromKeys,
  type AnchorKeys,
  anchorKeys,
} from "../anchors/keys.ts";
import { effectiveField, safeLabel } from "../core/request.ts";
import type { AccessTrace } from "./access_log.ts";
import { countKind, type ProxyContext } from "./state.ts";

const logger = getLogger(["incontext", "proxy"]);

/**
 * Counts, cross-checks and remembers a decision. Returns the prefix keys of
 * the chat conversation as sent, for recording its usage later.
 */
export function observe(
  decision: Rejected | Sending,
  { kind, trace }: { readonly kind: RequestKind; readonly trace: AccessTrace },
  context: ProxyContext,
): AnchorKeys | undefined {
  const { result } = decision;
  const { state, settings } = context;
  const rejected = decision.kind === "reject";
  const maxTokens = decision.kind === "send"
    ? decision.maxTokens ?? null
    : null;
  trace.action = rejected ? "rejected" : result.action;
  trace.source = result.source;
  trace.promptTokens = result.promptTokens ?? null;
  trace.maxTokens = maxTokens;
  state.requests.inc({ route: kind, action: trace.action });
  state.counts.inc({ kind: countKind(result) });
  const conversation = kind === "chat" && decision.kind === "send"
    ? anchorKeys(state.anchors, decision.sent)
    : undefined;
  const anchored = conversation &&
    anchorFromKeys(state.anchors, conversation)?.tokens;
  const exact = countKind(result) === "exact" ? result.promptTokens : undefined;
  if (anchored !== undefined && exact !== undefined && exact > 0) {
    const drift = Math.abs(anchored - exact) / exact;
    if (drift > settings.anchorTolerance) {
      state.disagreements.inc();
      logger.warn(
        "usage anchor disagrees with the exact count: exact={exact} anchor={anchor} source={source}",
        { exact, anchor: anchored, source: result.source },
      );
    }
  }
  const model = effectiveField(result.request, "model");
  state.remember({
    kind,
    model: typeof model === "string" ? safeLabel(model) : null,
    action: result.action,
    source: result.source,
    promptTokens: result.promptTokens ?? null,
    anchorTokens: anchored ?? null,
    maxTokens,
    rejected,
    reason: result.reason,
  });
  return conversation;
}
