/**
 * A URL as logs may show it: scheme, host and port only. Credentials, the
 * path's secrets and the query (where API keys travel) stay out.
 *
 * @module
 */

const DEFAULT_PORTS: Readonly<Record<string, string>> = {
  "http:": "80",
  "https:": "443",
};

/**
 * The URL's scheme, host and port, such as `http://127.0.0.1:8000`.
 *
 * @param url An absolute URL.
 * @returns Its scheme, host and port, or `"(invalid URL)"`.
 */
export function redactedUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return "(invalid URL)";
  }
  const port = parsed.port || DEFAULT_PORTS[parsed.protocol] || "";
  return `${parsed.protocol}//${parsed.hostname}${port ? `:${port}` : ""}`;
}
