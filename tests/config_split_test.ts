import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";

/**
 * deno.json is the package's configuration and tests/deno.json the tests':
 * the package's imports only, so that `task start` fetches only what the
 * package loads, and the tests' imports on top of them.
 */
interface Config {
  readonly name?: string;
  readonly exports?: Record<string, string>;
  readonly imports: Record<string, string>;
  readonly compilerOptions: unknown;
  readonly nodeModulesDir: unknown;
  readonly unstable: unknown;
}

const ROOT = new URL("../", import.meta.url);

async function readConfig(path: string): Promise<Config> {
  return JSON.parse(await Deno.readTextFile(new URL(path, ROOT)));
}

/** Code only: a JSDoc example's import is the user's, not the package's. */
function withoutComments(text: string): string {
  return text.split("\n").filter((line) => !/^\s*(\*|\/\/|\/\*\*)/.test(line))
    .join("\n");
}

/** The source text of every module of the package (mod.ts and src/). */
async function packageSources(dir = new URL("src/", ROOT)): Promise<string[]> {
  const texts: string[] = [];
  for await (const entry of Deno.readDir(dir)) {
    const url = new URL(entry.name + (entry.isDirectory ? "/" : ""), dir);
    if (entry.isDirectory) texts.push(...await packageSources(url));
    else if (entry.name.endsWith(".ts")) {
      texts.push(withoutComments(await Deno.readTextFile(url)));
    }
  }
  return texts;
}

Deno.test("deno.json and tests/deno.json stay in step", async (t) => {
  const pkg = await readConfig("deno.json");
  const tests = await readConfig("tests/deno.json");

  await t.step("deno.json imports only what the package imports", async () => {
    const sources = [
      withoutComments(await Deno.readTextFile(new URL("mod.ts", ROOT))),
      ...await packageSources(),
    ];
    for (const name of Object.keys(pkg.imports)) {
      // A static or dynamic import of the name or a subpath of it.
      const pattern = new RegExp(
        `(from|import\\()\\s*"${name.replace(/[/.]/g, "\\$&")}(/[^"]*)?"`,
      );
      ok(
        sources.some((text) => pattern.test(text)),
        `deno.json imports ${name}, which no module of the package imports: it belongs in tests/deno.json`,
      );
    }
  });

  await t.step("tests/deno.json pins the package's imports alike", () => {
    for (const [name, target] of Object.entries(pkg.imports)) {
      strictEqual(tests.imports[name], target, name);
    }
  });

  await t.step("tests/deno.json names every entry point of the package", () => {
    for (const [subpath, file] of Object.entries(pkg.exports ?? {})) {
      const name = `${pkg.name}${subpath.slice(1)}`;
      strictEqual(tests.imports[name], `.${file}`, name);
    }
  });

  await t.step("both compile and resolve alike", () => {
    deepStrictEqual(tests.compilerOptions, pkg.compilerOptions);
    strictEqual(tests.nodeModulesDir, pkg.nodeModulesDir);
    deepStrictEqual(tests.unstable, pkg.unstable);
  });
});
