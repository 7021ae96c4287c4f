/**
 * The relative links of Markdown documents, and those that lead nowhere: a
 * file that does not exist, or a heading its target does not have. Pure
 * functions over the documents' text, so that the checker itself can be
 * shown to fail on a broken link.
 */
import { posix } from "node:path";

/** One link as written: where it sits, and its target. */
export interface DocLink {
  /** The document's repository path, such as `docs/proxy.md`. */
  readonly doc: string;
  /** The target as written, such as `operating.md#metrics`. */
  readonly target: string;
}

/**
 * The text of `markdown` that renders as prose: fenced code blocks and
 * inline code spans blanked (a link written inside them is no link).
 */
export function proseOf(markdown: string): string {
  const kept: string[] = [];
  let fenced = false;
  for (const line of markdown.split("\n")) {
    if (/^\s*```/.test(line)) {
      fenced = !fenced;
      kept.push("");
    } else kept.push(fenced ? "" : line);
  }
  // A code span may wrap across lines; its backticks always pair up.
  return kept.join("\n").replace(/`[^`]*`/g, "``");
}

/** Every inline link of `markdown` whose target is relative (no scheme). */
export function relativeLinks(doc: string, markdown: string): DocLink[] {
  const links: DocLink[] = [];
  for (const [, target] of proseOf(markdown).matchAll(/\]\(([^)\s]+)\)/g)) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(target!)) continue;
    links.push({ doc, target: target! });
  }
  return links;
}

/**
 * The anchors of `markdown`'s headings as GitHub makes them (github-slugger):
 * lower case, every character but letters, digits, spaces, hyphens and
 * underscores dropped, spaces as hyphens, and `-1`, `-2`... after repeats.
 */
export function headingAnchors(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  let fenced = false;
  for (const line of markdown.split("\n")) {
    if (/^\s*```/.test(line)) fenced = !fenced;
    const heading = fenced ? undefined : /^#{1,6}\s+(.*?)\s*$/.exec(line)?.[1];
    if (heading === undefined) continue;
    const slug = heading.replace(/\[([^\]]*)\]\([^)]*\)/g, "$1").toLowerCase()
      .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, "")
      .replace(/ /g, "-");
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    anchors.add(count === 0 ? slug : `${slug}-${count}`);
  }
  return anchors;
}

/**
 * The links of `docs` (repository paths to text) that lead nowhere, one line
 * each. `read` gives a target's text, or undefined when no such file or
 * folder exists (a folder reads as "").
 */
export function brokenLinks(
  docs: ReadonlyMap<string, string>,
  read: (path: string) => string | undefined,
): string[] {
  const problems: string[] = [];
  for (const [doc, markdown] of docs) {
    for (const { target } of relativeLinks(doc, markdown)) {
      const hash = target.indexOf("#");
      const file = hash === -1 ? target : target.slice(0, hash);
      const anchor = hash === -1 ? undefined : target.slice(hash + 1);
      const path = file === ""
        ? doc
        : posix.normalize(posix.join(posix.dirname(doc), file));
      const text = path === doc ? markdown : read(path);
      if (text === undefined) {
        problems.push(
          `${doc}: (${target}) names ${path}, which does not exist`,
        );
      } else if (
        anchor !== undefined && path.endsWith(".md") &&
        !headingAnchors(text).has(decodeURIComponent(anchor))
      ) {
        problems.push(`${doc}: (${target}) names no heading of ${path}`);
      }
    }
  }
  return problems;
}
