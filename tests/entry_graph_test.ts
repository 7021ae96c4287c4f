import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";

const ROOT = new URL("../", import.meta.url);

/** The root entry's budget: `budget()` with its steps, the contract, the arithmetic. */
const MAX_ROOT_FILES = 15;

interface Dependency {
  readonly code?: { readonly specifier: string };
  readonly type?: { readonly specifier: string };
  readonly isDynamic?: boolean;
}

interface ModuleGraph {
  /** Every module Deno's graph holds, whether a static or a dynamic import reaches it. */
  readonly modules: readonly string[];
  /** The imports of each module. */
  readonly dependencies: ReadonlyMap<string, readonly Dependency[]>;
}

/** Deno's own module graph of `entry` (`deno info --json`), paths relative to the repository. */
async function moduleGraph(entry: string): Promise<ModuleGraph> {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json", entry],
    cwd: ROOT,
    stdout: "piped",
    stderr: "null",
  }).output();
  strictEqual(output.code, 0, `deno info ${entry} failed`);
  const info: {
    modules: { specifier: string; dependencies?: Dependency[] }[];
  } = JSON.parse(new TextDecoder().decode(output.stdout));
  const dependencies = new Map<string, Dependency[]>();
  for (const module of info.modules) {
    dependencies.set(name(module.specifier), module.dependencies ?? []);
  }
  return { modules: [...dependencies.keys()], dependencies };
}

/** A repository path for a local module, the specifier otherwise. */
function name(specifier: string): string {
  return specifier.startsWith(ROOT.href)
    ? specifier.slice(ROOT.href.length)
    : specifier;
}

/** What importing `entry` loads at once: its static imports, code or type, transitively. */
function staticClosure(graph: ModuleGraph, entry: string): Set<string> {
  const loaded = new Set<string>();
  const pending = [entry];
  while (pending.length > 0) {
    const module = pending.pop()!;
    if (loaded.has(module)) continue;
    loaded.add(module);
    for (const dependency of graph.dependencies.get(module) ?? []) {
      if (dependency.isDynamic) continue;
      for (const resolved of [dependency.code, dependency.type]) {
        if (resolved !== undefined) pending.push(name(resolved.specifier));
      }
    }
  }
  return loaded;
}

const isLocal = (module: string) => !module.includes(":");
const isNpm = (module: string) => module.startsWith("npm:");
const inBackendFolder = (module: string) =>
  /^src\/backends\/(?!_shared\/)[^/]+\//.test(module);

Deno.test("the root entry's module graph holds at most 15 files, and only the npm packages budget() needs", async () => {
  const root = await moduleGraph("mod.ts");
  // Every module Deno would fetch for the root, dynamic imports included.
  const local = root.modules.filter(isLocal);
  ok(
    local.length <= MAX_ROOT_FILES,
    `the root entry reaches ${local.length} files:\n${local.join("\n")}`,
  );
  const budget = await moduleGraph("src/core/budget.ts");
  deepStrictEqual(
    root.modules.filter(isNpm),
    budget.modules.filter(isNpm),
    "an npm package budget() does not need",
  );
});

Deno.test("the bundled registry loads no backend until one is selected, and then that one alone", async () => {
  const graph = await moduleGraph("src/backends/registry.ts");
  const atOnce = [...staticClosure(graph, "src/backends/registry.ts")];
  deepStrictEqual(atOnce.filter(inBackendFolder), []);
  // Each lazy import names one folder's own file.
  const lazy = (graph.dependencies.get("src/backends/registry.ts") ?? [])
    .filter((dependency) => dependency.isDynamic)
    .map((dependency) => name(dependency.code!.specifier))
    .sort();
  const folders = lazy.map((module) => module.split("/")[2]);
  deepStrictEqual(
    lazy,
    folders.map((folder) => `src/backends/${folder}/${folder}_backend.ts`),
  );
  strictEqual(new Set(folders).size, 9);
});

Deno.test("the ./config entry loads no backend until one is selected", async () => {
  const graph = await moduleGraph("src/config/mod.ts");
  const atOnce = [...staticClosure(graph, "src/config/mod.ts")];
  deepStrictEqual(atOnce.filter(inBackendFolder), []);
});

/** Each framework bridge's entry, and the npm packages of its framework. */
const FRAMEWORK_BRIDGES: readonly [string, RegExp][] = [
  ["src/bridges/ai_sdk/mod.ts", /^npm:\/?(?:ai|@ai-sdk\/)/],
  [
    "src/bridges/langchain/mod.ts",
    /^npm:\/?(?:langchain|@langchain\/|langsmith)/,
  ],
  ["src/bridges/openai_agents/mod.ts", /^npm:\/?(?:@openai\/agents|openai@)/],
];

Deno.test("a framework bridge loads none of its framework's modules, and no other entry loads a bridge", async () => {
  const manifest = JSON.parse(
    await Deno.readTextFile(new URL("deno.json", ROOT)),
  ) as { exports: Record<string, string> };
  const bridges = FRAMEWORK_BRIDGES.map(([entry]) => entry);
  for (const [entry, framework] of FRAMEWORK_BRIDGES) {
    const graph = await moduleGraph(entry);
    deepStrictEqual(graph.modules.filter((m) => framework.test(m)), [], entry);
  }
  for (const file of Object.values(manifest.exports)) {
    const entry = file.replace(/^\.\//, "");
    if (bridges.includes(entry)) continue;
    const graph = await moduleGraph(entry);
    const folders = bridges.map((bridge) => bridge.replace(/mod\.ts$/, ""));
    deepStrictEqual(
      graph.modules.filter((m) => folders.some((f) => m.startsWith(f))),
      [],
      entry,
    );
  }
});
