import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import {
  checkArchitecture,
  findCycles,
  importGraph,
  type Layering,
  parseLayers,
  readSpecifiers,
  readTree,
} from "./_kit/architecture.ts";

const ROOT = new URL("../", import.meta.url);

async function projectLayering(): Promise<Layering> {
  return parseLayers(
    await Deno.readTextFile(new URL("docs/architecture.md", ROOT)),
  );
}

async function projectGraph() {
  const files = await readTree(ROOT, "src");
  files.set("mod.ts", await Deno.readTextFile(new URL("mod.ts", ROOT)));
  return importGraph(files);
}

Deno.test("checkArchitecture() finds nothing to report in src/", async () => {
  const problems = checkArchitecture(
    await projectGraph(),
    await projectLayering(),
  );
  deepStrictEqual(problems, []);
});

Deno.test("the architecture document declares every folder of src/ as a layer", async () => {
  const { layers } = await projectLayering();
  const folders: string[] = [];
  for await (const entry of Deno.readDir(new URL("src/", ROOT))) {
    if (entry.isDirectory) folders.push(entry.name);
  }
  deepStrictEqual([...layers].sort(), folders.sort());
});

/** What `deno info --json` says of a module graph, as far as it is read here. */
interface DenoInfo {
  readonly modules: {
    readonly specifier: string;
    readonly dependencies?: {
      readonly code?: { readonly specifier: string };
      readonly type?: { readonly specifier: string };
    }[];
  }[];
}

// The checker's reader must not miss an import that Deno itself follows:
// its graph is compared with Deno's own module graph of every entry.
Deno.test("importGraph() holds every import of Deno's module graph", async () => {
  const manifest = JSON.parse(
    await Deno.readTextFile(new URL("deno.json", ROOT)),
  ) as { exports: Record<string, string> };
  const modules: DenoInfo["modules"] = [];
  for (const entry of Object.values(manifest.exports)) {
    const output = await new Deno.Command(Deno.execPath(), {
      args: ["info", "--json", entry],
      cwd: ROOT,
      stdout: "piped",
      stderr: "null",
    }).output();
    strictEqual(output.code, 0, `deno info ${entry} failed`);
    const info: DenoInfo = JSON.parse(new TextDecoder().decode(output.stdout));
    modules.push(...info.modules);
  }
  const local = (url: string): string | undefined =>
    url.startsWith(ROOT.href) ? url.slice(ROOT.href.length) : undefined;
  const graph = await projectGraph();
  const missing: string[] = [];
  let edges = 0;
  for (const module of modules) {
    const from = local(module.specifier);
    if (from === undefined || !graph.has(from)) continue;
    for (const dependency of module.dependencies ?? []) {
      for (const resolved of [dependency.code, dependency.type]) {
        const to = resolved && local(resolved.specifier);
        if (to === undefined || !graph.has(to)) continue;
        edges++;
        if (!graph.get(from)!.includes(to)) missing.push(`${from} -> ${to}`);
      }
    }
  }
  deepStrictEqual(missing, []);
  ok(edges > 100, `only ${edges} imports compared`);
});

/** A synthetic tree: every file imports the files listed after it. */
function tree(files: Record<string, readonly string[]>) {
  return new Map(Object.entries(files));
}

const LAYERS: Layering = {
  layers: ["_internal", "core", "cache", "backends", "proxy", "testing"],
};
const LAYERS_WITH_CLI: Layering = { layers: [...LAYERS.layers, "cli"] };

Deno.test("checkArchitecture() reports each broken rule", async (t) => {
  const clean = {
    "mod.ts": ["src/core/budget.ts"],
    "src/_internal/url.ts": [],
    "src/core/budget.ts": ["src/_internal/url.ts"],
    "src/cache/key.ts": ["src/core/budget.ts"],
    "src/backends/registry.ts": [
      "src/backends/vllm/mod.ts",
      "src/backends/tgi/mod.ts",
    ],
    "src/backends/_shared/http.ts": ["src/cache/key.ts"],
    "src/backends/vllm/mod.ts": ["src/backends/_shared/http.ts"],
    "src/backends/tgi/mod.ts": [
      "src/backends/_shared/http.ts",
      "src/backends/tgi/payload.ts",
    ],
    "src/backends/tgi/payload.ts": ["src/core/budget.ts"],
    "src/proxy/mod.ts": ["src/backends/registry.ts"],
    "src/testing/fake.ts": ["src/proxy/mod.ts"],
  };

  await t.step("a tree that keeps every rule passes", () => {
    deepStrictEqual(checkArchitecture(tree(clean), LAYERS), []);
  });

  await t.step("a cycle of two files", () => {
    const graph = tree({
      ...clean,
      "src/_internal/url.ts": ["src/_internal/deadline.ts"],
      "src/_internal/deadline.ts": ["src/_internal/url.ts"],
    });
    deepStrictEqual(checkArchitecture(graph, LAYERS), [
      "import cycle: src/_internal/deadline.ts -> src/_internal/url.ts -> src/_internal/deadline.ts",
    ]);
  });

  await t.step("a cycle through three files of one layer", () => {
    const graph = tree({
      ...clean,
      "src/core/budget.ts": ["src/core/caps.ts"],
      "src/core/caps.ts": ["src/core/kind.ts"],
      "src/core/kind.ts": ["src/core/budget.ts"],
    });
    deepStrictEqual(checkArchitecture(graph, LAYERS), [
      "import cycle: src/core/budget.ts -> src/core/caps.ts -> src/core/kind.ts -> src/core/budget.ts",
    ]);
  });

  await t.step("a file that imports itself", () => {
    deepStrictEqual(
      findCycles(tree({ "src/core/a.ts": ["src/core/a.ts"] })),
      [["src/core/a.ts", "src/core/a.ts"]],
    );
  });

  await t.step("an import of a layer above", () => {
    const graph = tree({
      ...clean,
      "src/cache/key.ts": ["src/core/budget.ts", "src/proxy/log.ts"],
      "src/proxy/log.ts": [],
    });
    deepStrictEqual(checkArchitecture(graph, LAYERS), [
      "src/cache/key.ts imports src/proxy/log.ts: the cache layer may not import proxy, which is above it",
    ]);
  });

  await t.step("product code that imports src/testing/", () => {
    const graph = tree({
      ...clean,
      "mod.ts": ["src/core/budget.ts", "src/testing/fake.ts"],
      "src/testing/fake.ts": [],
    });
    deepStrictEqual(checkArchitecture(graph, LAYERS), [
      "mod.ts imports src/testing/fake.ts: product code may not import src/testing/",
    ]);
  });

  await t.step("only the demo upstream command may import src/testing/", () => {
    const graph = tree({
      ...clean,
      "src/cli/demo_upstream/command.ts": ["src/testing/fake.ts"],
      "src/cli/serve/command.ts": ["src/testing/fake.ts"],
    });
    deepStrictEqual(checkArchitecture(graph, LAYERS_WITH_CLI), [
      "src/cli/serve/command.ts imports src/testing/fake.ts: product code may not import src/testing/",
    ]);
  });

  await t.step("a backend's folder that imports another backend's", () => {
    const graph = tree({
      ...clean,
      "src/backends/vllm/mod.ts": ["src/backends/tgi/payload.ts"],
    });
    deepStrictEqual(checkArchitecture(graph, LAYERS), [
      "src/backends/vllm/mod.ts imports src/backends/tgi/payload.ts: a backend's folder may not import another backend's folder",
    ]);
  });

  await t.step("shared backend code that imports a backend's folder", () => {
    const graph = tree({
      ...clean,
      "src/backends/_shared/http.ts": ["src/backends/tgi/payload.ts"],
    });
    deepStrictEqual(checkArchitecture(graph, LAYERS), [
      "src/backends/_shared/http.ts imports src/backends/tgi/payload.ts: a backend's folder may not import another backend's folder",
    ]);
  });

  await t.step("a file outside every declared layer", () => {
    const graph = tree({ ...clean, "src/loose.ts": [], "src/extra/x.ts": [] });
    deepStrictEqual(checkArchitecture(graph, LAYERS), [
      "src/extra/x.ts is in no declared layer",
      "src/loose.ts is in no declared layer",
    ]);
  });
});

Deno.test("readSpecifiers() reads every form of import and skips comments", () => {
  const text = [
    `/**`,
    ` * @example`,
    ` * import { budget } from "../core/commented.ts";`,
    ` */`,
    `import { a } from "./a.ts";`,
    `import {`,
    `  b,`,
    `  type B,`,
    `} from "../b.ts";`,
    `import type { C } from "./c.ts";`,
    `export { d } from "./d.ts";`,
    `export type * from "./e.ts";`,
    `import "./f.ts";`,
    `// import { g } from "./g.ts";`,
    `const h = await import("./h.ts");`,
    `const worker = new URL("./worker.ts", import.meta.url);`,
    `const page = "http://example.com/x";`,
    `import { z } from "zod";`,
  ].join("\n");
  deepStrictEqual(readSpecifiers(text).sort(), [
    "../b.ts",
    "./a.ts",
    "./c.ts",
    "./d.ts",
    "./e.ts",
    "./f.ts",
    "./h.ts",
    "./worker.ts",
  ]);
});

Deno.test("importGraph() resolves specifiers against each file's folder", () => {
  const graph = importGraph(
    new Map([
      ["src/core/a.ts", `import { b } from "../cache/b.ts";`],
      ["src/cache/b.ts", `import { c } from "./c.ts";`],
      ["src/cache/c.ts", `import { x } from "./missing.ts";`],
    ]),
  );
  deepStrictEqual(Object.fromEntries(graph), {
    "src/core/a.ts": ["src/cache/b.ts"],
    "src/cache/b.ts": ["src/cache/c.ts"],
    "src/cache/c.ts": [],
  });
});

Deno.test("parseLayers() reads the layers block, lowest last in the document", () => {
  const markdown = [
    "# Layers",
    "",
    "```layers",
    "proxy      # the proxy",
    "core",
    "_internal",
    "```",
  ].join("\n");
  deepStrictEqual(parseLayers(markdown).layers, ["_internal", "core", "proxy"]);
});
