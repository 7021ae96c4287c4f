import { deepStrictEqual } from "node:assert/strict";

// Published code must run on Node 20, and `deno pack` does not downlevel
// these; tests, examples and benchmarks may use them.
const FORBIDDEN: [string, RegExp][] = [
  ["using declarations", /\bawait\s+using\b|\busing\s+[A-Za-z_$][\w$]*\s*=/],
  ["Promise.withResolvers", /\bPromise\.withResolvers\b/],
  ["Object.groupBy / Map.groupBy", /\b(?:Object|Map)\.groupBy\b/],
  ["Array.fromAsync", /\bArray\.fromAsync\b/],
  ["DisposableStack", /\b(?:Async)?DisposableStack\b/],
  [
    "iterator helpers",
    /\.(?:values|keys|entries)\(\)\s*\.(?:map|filter|take|drop|flatMap|reduce|toArray|forEach|some|every|find)\(|\bIterator\.from\b/,
  ],
  ["dynamic import of a non-literal", /\bimport\(\s*[^"'\s)]/],
];

// The command line imports the backend plugin modules its user names
// (INCONTEXT_BACKEND_MODULES): an application's import, in the one file that
// does it. The library itself never imports a module by name.
const ALLOWED: readonly string[] = [
  "setup/prepare.ts: dynamic import of a non-literal",
];

async function publishedFiles(): Promise<URL[]> {
  const root = new URL("../", import.meta.url);
  const files = [new URL("mod.ts", root)];
  const folders = [new URL("src/", root)];
  for (const folder of folders) {
    for await (const entry of Deno.readDir(folder)) {
      if (entry.isDirectory) folders.push(new URL(`${entry.name}/`, folder));
      else if (entry.name.endsWith(".ts")) {
        files.push(new URL(entry.name, folder));
      }
    }
  }
  return files;
}

/** Drops JSDoc and line comments: their examples run as tests, not in the package. */
function code(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\//g, "").split("\n").filter((line) =>
    !line.trim().startsWith("//")
  ).join("\n");
}

Deno.test("published code uses only syntax and APIs that Node 20 has", async () => {
  const found: string[] = [];
  const files = await publishedFiles();
  for (const file of files) {
    const text = code(await Deno.readTextFile(file));
    for (const [what, pattern] of FORBIDDEN) {
      const finding = `${
        file.pathname.split("/").slice(-2).join("/")
      }: ${what}`;
      if (pattern.test(text) && !ALLOWED.includes(finding)) {
        found.push(finding);
      }
    }
  }
  deepStrictEqual(found, []);
  deepStrictEqual(files.length > 20, true);
});

Deno.test("the Node 20 syntax check catches what it looks for", () => {
  const samples = [
    "await using cache = createCountCache();",
    "const { promise } = Promise.withResolvers();",
    "Object.groupBy(items, f);",
    "await Array.fromAsync(stream);",
    "const stack = new DisposableStack();",
    "map.values().map((v) => v);",
    "await import(specifier);",
  ];
  for (const sample of samples) {
    deepStrictEqual(
      FORBIDDEN.some(([, pattern]) => pattern.test(code(sample))),
      true,
      sample,
    );
  }
  deepStrictEqual(
    FORBIDDEN.some(([, pattern]) =>
      pattern.test(code('await import("./x.ts");'))
    ),
    false,
  );
});
