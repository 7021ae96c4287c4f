/**
 * The rules an http(s) URL setting keeps: a host, a valid port, no
 * credentials, no fragment.
 *
 * @module
 */

/**
 * Checks a tokenizer URL against the rules of the original plugin: http(s)
 * only, a host, a valid non-zero port, no user:password, no fragment. A query
 * string is fine.
 *
 * @returns `undefined` when the URL is valid, else the broken rule (never the URL itself).
 */
export function checkHttpUrl(value: string): string | undefined {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return "must be an absolute http(s) URL with a valid port";
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    return "must use http or https";
  }
  // WHATWG parsing reads "http:///x" as host "x"; the original (urllib) saw no host.
  if (url.hostname === "" || !/^https?:\/\/[^/?#]/i.test(value)) {
    return "must name a host";
  }
  if (url.port === "0") return "must not use port 0";
  if (url.username !== "" || url.password !== "") {
    return "must not contain user:password (use INCONTEXT_TOKENIZER_API_KEY)";
  }
  if (url.hash !== "" || value.includes("#")) {
    return "must not contain a fragment";
  }
  return undefined;
}
