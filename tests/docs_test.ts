/**
 * The documentation held to what it documents: every relative link of the
 * README and of `docs/` leads to a file and a heading that exist, every file
 * `docs/life-of-a-request.md` names exists, the metrics table of
 * `docs/operating.md` names every metric the code defines, with its type,
 * and no other, and `docs/` stays a guide one can read: under 20,000 words.
 */
import { deepStrictEqual, ok } from "node:assert/strict";
import { brokenLinks, relativeLinks } from "./_kit/doc_links.ts";
import { readTree } from "./_kit/architecture.ts";
import { FakeStoreServer } from "./_kit/fake_store.ts";
import { createProxyHandler } from "../src/proxy/mod.ts";
import { BackendChain } from "../src/core/backend_chain.ts";
import { createCountCache } from "../src/cache/mod.ts";
import { SharedStore } from "../src/replicas/store.ts";
import { serverRefusals } from "../src/cli/serve/refusals.ts";
import { chainMoves } from "../src/cli/serve/chain_moves.ts";
import { FakeBackend } from "../src/testing/mod.ts";

const ROOT = new URL("../", import.meta.url);

/** README.md and every document of docs/, by repository path. */
async function documents(): Promise<Map<string, string>> {
  const docs = new Map<string, string>();
  docs.set("README.md", await Deno.readTextFile(new URL("README.md", ROOT)));
  for await (const entry of Deno.readDir(new URL("docs/", ROOT))) {
    if (!entry.isFile || !entry.name.endsWith(".md")) continue;
    docs.set(
      `docs/${entry.name}`,
      await Deno.readTextFile(new URL(`docs/${entry.name}`, ROOT)),
    );
  }
  return docs;
}

/** A repository file's text, "" for a folder, undefined when there is none. */
function readRepoPath(path: string): string | undefined {
  try {
    const url = new URL(path, ROOT);
    return Deno.statSync(url).isDirectory ? "" : Deno.readTextFileSync(url);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return undefined;
    throw error;
  }
}

Deno.test("every relative link of README.md and docs/ leads to a file and heading that exist", async (t) => {
  await t.step(
    "brokenLinks() names a missing file and a missing heading",
    () => {
      const docs = new Map([
        [
          "docs/a.md",
          "# A\n\n## Its part\n\nSee [b](b.md), [part](#its-part).",
        ],
        [
          "docs/c.md",
          "[gone](gone.md), [b's](b.md#nothing), `[code](gone.md)`\n```\n[x](gone.md)\n```",
        ],
      ]);
      const files = new Map([["docs/b.md", "# B `code`\n"]]);
      deepStrictEqual(brokenLinks(docs, (path) => files.get(path)), [
        "docs/c.md: (gone.md) names docs/gone.md, which does not exist",
        "docs/c.md: (b.md#nothing) names no heading of docs/b.md",
      ]);
    },
  );

  await t.step("headings are anchored as GitHub anchors them", () => {
    const docs = new Map([[
      "docs/a.md",
      "## 7. The count cache\n## The `/incontext/context` page\n## The upstream's own answer\n## Again\n## Again\n\n" +
      "[1](#7-the-count-cache) [2](#the-incontextcontext-page) [3](#the-upstreams-own-answer) [4](#again-1)",
    ]]);
    deepStrictEqual(brokenLinks(docs, () => undefined), []);
  });

  await t.step("the README and docs/", async () => {
    const docs = await documents();
    ok(
      [...docs].flatMap(([doc, text]) => relativeLinks(doc, text)).length > 50,
      "the documents link to each other",
    );
    deepStrictEqual(brokenLinks(docs, readRepoPath), []);
  });
});

/** The words of `text` as `wc -w` counts them: runs of non-whitespace. */
function wordCount(text: string): number {
  return text.split(/[ \t\n\v\f\r]+/).filter((word) => word !== "").length;
}

Deno.test("docs/ holds fewer than 20,000 words", async (t) => {
  await t.step("wordCount() counts runs between whitespace", () => {
    deepStrictEqual(wordCount(" a  b\tc\n\n| --- |\r\nd "), 7);
  });

  await t.step("the documents of docs/", async () => {
    const counts = [...await documents()]
      .filter(([path]) => path.startsWith("docs/"))
      .map(([path, text]) => [path, wordCount(text)] as const);
    const total = counts.reduce((sum, [, words]) => sum + words, 0);
    ok(
      total < 20_000,
      `docs/ holds ${total} words: ${
        counts.map(([path, words]) => `${path} ${words}`).join(", ")
      }`,
    );
  });
});

Deno.test("docs/life-of-a-request.md names only files that exist", async () => {
  const page = await Deno.readTextFile(
    new URL("docs/life-of-a-request.md", ROOT),
  );
  const sources = [
    ...(await readTree(ROOT, "src")).keys(),
    ...(await readTree(ROOT, "packages/engine/src")).keys(),
  ];
  // A path from the root, or the end of one (`model/prefix.ts`, `kind.ts`)
  // where the step has named its folder.
  const named = [...page.matchAll(/`([\w./-]+\.ts)`/g)].map(([, file]) =>
    file!
  );
  ok(named.length > 50, "the page names the file of each step");
  const missing = named.filter((file) =>
    !sources.some((path) => path === file || path.endsWith(`/${file}`))
  );
  deepStrictEqual(missing, []);
});

/** A metric's name and type, as `# TYPE` lines give them. */
type Metrics = Map<string, string>;

const TYPES: Record<string, string> = {
  Counter: "counter",
  Histogram: "histogram",
  gauge: "gauge",
  counter: "counter",
};

/**
 * Every metric `src/` defines: the name given to `new Counter(...)`,
 * `new Histogram(...)`, `gauge(...)` or `counter(...)` (the families of
 * `_internal/metrics.ts`; a method of that name is no definition), as a
 * string or a constant of the same file.
 */
async function definedMetrics(): Promise<Metrics> {
  const metrics: Metrics = new Map();
  const files = await readTree(ROOT, "src");
  const definition =
    /(?:\bnew\s+(Counter|Histogram)|(?<![\w$])(?<![^.]\.)(gauge|counter))\(\s*(?:"([^"]+)"|([A-Z][A-Z0-9_]*)\b)/g;
  for (const [path, text] of files) {
    if (path.startsWith("src/testing/")) continue;
    for (const match of text.matchAll(definition)) {
      const [, family, helper, literal, constant] = match;
      const name = literal ??
        new RegExp(`const ${constant}\\b[^=]*=\\s*"([^"]+)"`).exec(text)?.[1];
      ok(name !== undefined, `${path}: the value of ${constant}`);
      metrics.set(name, TYPES[family ?? helper!]!);
    }
  }
  return metrics;
}

/** The `# TYPE` lines of a Prometheus text. */
function exposedMetrics(text: string): Metrics {
  const metrics: Metrics = new Map();
  for (const [, name, type] of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    metrics.set(name!, type!);
  }
  return metrics;
}

/** The metrics table of docs/operating.md: a row per metric, its name and type. */
async function documentedMetrics(): Promise<Metrics> {
  const page = await Deno.readTextFile(new URL("docs/operating.md", ROOT));
  const start = page.indexOf("\n## Metrics\n");
  ok(start !== -1, "docs/operating.md has a section Metrics");
  const section = page.slice(start, page.indexOf("\n## ", start + 1));
  const metrics: Metrics = new Map();
  for (const line of section.split("\n")) {
    const cells = line.split("|").slice(1, -1).map((cell) => cell.trim());
    const name = /^`([a-z_:]+)(?:\{[a-z_,]*\})?`$/.exec(cells[0] ?? "")?.[1];
    if (name !== undefined) metrics.set(name, cells[1]!);
  }
  return metrics;
}

/** Entries sorted by name, so that a difference reads as one. */
function sorted(metrics: Metrics): [string, string][] {
  return [...metrics].sort(([a], [b]) => a < b ? -1 : a > b ? 1 : 0);
}

Deno.test("docs/operating.md's metrics table names every metric the code defines, with its type", async (t) => {
  const defined = await definedMetrics();

  await t.step(
    "the definitions found are those a full proxy exposes",
    async () => {
      // Every part that reports metrics: a shared store, a backend chain, the
      // server's refusals and a count cache, as `incontext serve` puts them.
      await using cache = createCountCache({ inProcess: true });
      const store = new SharedStore({
        connection: new FakeStoreServer().connect(),
        timeoutMs: 5,
        ttlSeconds: 60,
      });
      try {
        const chain = new BackendChain([
          new FakeBackend({ count: 1 }),
          new FakeBackend({ count: 1 }),
        ]);
        const proxy = createProxyHandler({
          upstream: "http://upstream.test",
          window: 64000,
          contextLength: 65536,
          backend: chain,
          cache,
          reporters: [serverRefusals().reporter, chainMoves(chain)!, {
            name: "sharedStore",
            status: () => store.status(),
            metricLines: () => store.metricLines(),
          }],
        });
        const response = await proxy(
          new Request("http://proxy.test/incontext/metrics"),
        );
        deepStrictEqual(
          sorted(exposedMetrics(await response.text())),
          sorted(defined),
        );
      } finally {
        await store[Symbol.asyncDispose]();
      }
    },
  );

  await t.step("the table has a row per metric, with its type", async () => {
    deepStrictEqual(sorted(await documentedMetrics()), sorted(defined));
  });
});
