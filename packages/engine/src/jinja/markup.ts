// markupsafe's escape and striptags as jinja2's `e`/`escape` and `striptags`
// filters use them, on the value's Python str() (None is "None", an
// Undefined ""). Entities beyond the ones written here are refused rather
// than left undecoded.
import { unsupported } from "./errors.ts";
import { pySplit } from "./py.ts";

const ESCAPES: Readonly<Record<string, string>> = {
  "&": "&amp;",
  "<": "&lt;",
  ">": "&gt;",
  '"': "&#34;",
  "'": "&#39;",
};

/** markupsafe's `escape()` of a text. */
export function htmlEscape(text: string): string {
  return text.replace(/[&<>"']/g, (ch) => ESCAPES[ch]!);
}

const NAMED: Readonly<Record<string, string>> = {
  amp: "&",
  lt: "<",
  gt: ">",
  quot: '"',
  apos: "'",
  nbsp: "\u00a0",
};

/**
 * Python's `html.unescape()` for the references templates meet: the named
 * ones above with their `;`, and decimal or hex code points with theirs.
 *
 * @throws {Error} For any other reference, which Python would decode by
 * tables this module does not carry.
 */
export function htmlUnescape(text: string): string {
  if (!text.includes("&")) return text;
  return text.replace(
    /&(#[0-9]+;|#[xX][0-9a-fA-F]+;|[a-zA-Z]+;)|&(?=[^\t\n\f <&;])/g,
    (_whole, ref: string | undefined) => {
      if (ref === undefined) {
        throw unsupported("this character reference in striptags");
      }
      if (ref.startsWith("#")) {
        const hex = ref[1] === "x" || ref[1] === "X";
        const code = parseInt(ref.slice(hex ? 2 : 1, -1), hex ? 16 : 10);
        // Python maps these through tables (cp1252, U+FFFD): not carried here.
        if (
          code === 0 || (code >= 0x80 && code <= 0x9f) ||
          (code >= 0xd800 && code <= 0xdfff) || code > 0x10ffff
        ) throw unsupported("this character reference in striptags");
        return String.fromCodePoint(code);
      }
      const named = NAMED[ref.slice(0, -1)];
      if (named === undefined) {
        throw unsupported("this character reference in striptags");
      }
      return named;
    },
  );
}

/** markupsafe 2.1's `Markup(text).striptags()`: comments and tags out, spaces collapsed, entities decoded. */
export function stripTags(text: string): string {
  const stripped = text.replace(/<!--[\s\S]*?-->/g, "").replace(
    /<[\s\S]*?>/g,
    "",
  );
  return htmlUnescape(pySplit(stripped, null, -1).join(" "));
}
