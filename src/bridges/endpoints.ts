/**
 * Which requests the bridges budget: the endpoint paths, and the JSON
 * content types.
 *
 * @module
 */
import type { RequestKind } from "../core/request.ts";

const ENDPOINTS: readonly [string, RequestKind][] = [
  ["/chat/completions", "chat"],
  ["/completions", "completion"],
  ["/responses", "responses"],
];

/** The kind of a budgeted endpoint (`.../chat/completions`, `.../completions`, `.../responses`), else undefined. */
export function endpointKind(url: string): RequestKind | undefined {
  let pathname: string;
  try {
    pathname = new URL(url).pathname;
  } catch {
    return undefined;
  }
  return pathKind(pathname);
}

/** {@linkcode endpointKind} of a URL's path, for a caller that parsed the URL already. */
export function pathKind(pathname: string): RequestKind | undefined {
  const path = pathname.replace(/\/+$/, "");
  return ENDPOINTS.find(([suffix]) => path.endsWith(suffix))?.[1];
}

/** True for `application/json` and `application/*+json`, with or without parameters. */
export function isJsonContentType(value: string | null): boolean {
  if (value === null) return false;
  const type = value.split(";")[0]!.trim().toLowerCase();
  return type === "application/json" ||
    (type.startsWith("application/") && type.endsWith("+json"));
}
