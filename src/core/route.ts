/**
 * Routes: the model (and provider, base URL) a budget applies to, and whether
 * a request is inside one.
 *
 * @module
 */
import type { JsonObject } from "./backend.ts";
import { effectiveField } from "./request.ts";

/** The one route a budget applies to. */
export interface BudgetRoute {
  /** The model the window belongs to; requests for other models pass untouched. */
  readonly model: string;
  /** The provider, compared trimmed and lower-cased with the target's. */
  readonly provider?: string;
  /** The base URL, compared normalised (lower-case host, no default port, no trailing slash). */
  readonly baseUrl?: string;
  /**
   * This route's own compression window W, when its model compresses at a
   * different point than the budget's `window`.
   *
   * @default the budget's `window`
   */
  readonly window?: number;
}

/** Where a request is going, when the host knows. */
export interface BudgetTarget {
  /** The provider the host will send the request to. */
  readonly provider?: string;
  /** The base URL the host will send the request to. */
  readonly baseUrl?: string;
}

/**
 * Why a request is outside the route, or undefined when it is inside. The
 * effective model (an `extra_body.model` wins) must equal the route's;
 * provider and base URL are compared only where both sides name one.
 */
export function routeMismatch(
  request: JsonObject,
  route: BudgetRoute,
  target: BudgetTarget | undefined,
): string | undefined {
  if (effectiveField(request, "model") !== route.model) return "model";
  if (
    route.provider !== undefined && target?.provider !== undefined &&
    normaliseProvider(route.provider) !== normaliseProvider(target.provider)
  ) return "provider";
  if (
    route.baseUrl !== undefined && target?.baseUrl !== undefined &&
    normaliseBaseUrl(route.baseUrl) !== normaliseBaseUrl(target.baseUrl)
  ) return "base URL";
  return undefined;
}

/**
 * The first of `routes` the request belongs to, or why it belongs to none:
 * the mismatch of a route whose model matched, else `"model"`.
 */
export function pickRoute(
  request: JsonObject,
  routes: readonly BudgetRoute[],
  target: BudgetTarget | undefined,
): BudgetRoute | string {
  let why = "model";
  for (const route of routes) {
    const mismatch = routeMismatch(request, route, target);
    if (mismatch === undefined) return route;
    if (mismatch !== "model") why = mismatch;
  }
  return why;
}

function normaliseProvider(provider: string): string {
  return provider.trim().toLowerCase();
}

/**
 * Lower-case scheme and host, default port dropped (the URL parser does
 * both), trailing slashes dropped. An unparsable URL compares as trimmed text.
 */
export function normaliseBaseUrl(baseUrl: string): string {
  const trimmed = baseUrl.trim();
  try {
    return new URL(trimmed).href.replace(/\/+$/, "");
  } catch {
    return trimmed.replace(/\/+$/, "");
  }
}
