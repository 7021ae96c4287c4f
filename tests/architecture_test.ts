import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import {
  checkArchitecture,
  checkTestLayout,
  coveredModules,
  crossingImports,
  findCycles,
  importGraph,
  type Layering,
  parseLayers,
  readSpecifiers,
  readTree,
  TEST_LAYOUT,
  type TestLayout,
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

/** Where the engine, a workspace member, sits in the repository. */
const ENGINE = "packages/engine";

/** The engine's files, its own root stripped: `src/jinja/ast.ts`. */
async function engineGraph() {
  const files = new Map<string, string>();
  for (const [path, text] of await readTree(ROOT, `${ENGINE}/src`)) {
    files.set(path.slice(ENGINE.length + 1), text);
  }
  files.set(
    "mod.ts",
    await Deno.readTextFile(new URL(`${ENGINE}/mod.ts`, ROOT)),
  );
  return importGraph(files);
}

async function engineLayering(): Promise<Layering> {
  return parseLayers(
    await Deno.readTextFile(new URL(`${ENGINE}/README.md`, ROOT)),
  );
}

Deno.test("checkArchitecture() finds nothing to report in the engine's src/", async () => {
  const graph = await engineGraph();
  ok(graph.size > 40, `only ${graph.size} files read`);
  deepStrictEqual(checkArchitecture(graph, await engineLayering()), []);
});

Deno.test("the engine's README declares every folder of its src/ as a layer", async () => {
  const { layers } = await engineLayering();
  const folders: string[] = [];
  for await (const entry of Deno.readDir(new URL(`${ENGINE}/src/`, ROOT))) {
    if (entry.isDirectory) folders.push(entry.name);
  }
  deepStrictEqual([...layers].sort(), folders.sort());
});

Deno.test("the two packages meet only by name: no relative import crosses from one to the other", async () => {
  const files = new Map([
    ...await readTree(ROOT, "src"),
    ...await readTree(ROOT, ENGINE),
  ]);
  files.set("mod.ts", await Deno.readTextFile(new URL("mod.ts", ROOT)));
  ok(files.size > 200, `only ${files.size} files read`);
  deepStrictEqual(crossingImports(files, [ENGINE]), []);
});

Deno.test("crossingImports() reports an import of another package by path, either way", () => {
  const files = new Map([
    ["src/a.ts", 'import { x } from "../packages/e/src/x.ts";'],
    ["src/b.ts", 'import { a } from "./a.ts";\nimport { x } from "@e/pkg";'],
    ["packages/e/src/x.ts", 'import { a } from "../../../src/a.ts";'],
    ["packages/e/src/y.ts", 'import { x } from "./x.ts";'],
  ]);
  deepStrictEqual(crossingImports(files, ["packages/e"]), [
    "packages/e/src/x.ts imports src/a.ts: another package, by path",
    "src/a.ts imports packages/e/src/x.ts: another package, by path",
  ]);
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

/** The repository paths of every source file a test folder may mirror. */
async function projectSources(): Promise<Set<string>> {
  const folders = [
    "src",
    ...TEST_LAYOUT.outsideSrc,
    ...Object.values(TEST_LAYOUT.members),
  ];
  const sources = new Set<string>();
  for (const folder of folders) {
    for (const path of (await readTree(ROOT, folder)).keys()) sources.add(path);
  }
  return sources;
}

Deno.test("checkTestLayout() finds nothing to report in tests/", async () => {
  const tests = await readTree(ROOT, "tests");
  deepStrictEqual(
    checkTestLayout(tests, await projectSources(), TEST_LAYOUT),
    [],
  );
  const mirrored = [...tests.keys()].filter((path) =>
    path.endsWith("_test.ts") && path.split("/").length > 2 &&
    !TEST_LAYOUT.crossCutting.includes(path.split("/")[1]!)
  );
  ok(mirrored.length > 50, `only ${mirrored.length} tests checked`);
});

Deno.test("every folder the test layout names is a folder of tests/", async () => {
  const folders: string[] = [];
  for await (const entry of Deno.readDir(new URL("tests/", ROOT))) {
    if (entry.isDirectory) folders.push(entry.name);
  }
  const named = [
    ...TEST_LAYOUT.crossCutting,
    ...TEST_LAYOUT.outsideSrc,
    ...Object.keys(TEST_LAYOUT.members),
  ];
  for (const name of named) {
    ok(folders.includes(name), `tests/${name}/ does not exist`);
  }
});

const TEST_LAYOUT_OF_TREE: TestLayout = {
  crossCutting: ["conformance", "_kit", "fixtures"],
  outsideSrc: ["examples"],
  members: { engine: "packages/engine/src" },
};

Deno.test("checkTestLayout() reports each broken rule", async (t) => {
  const sources = new Set([
    "src/core/budget.ts",
    "src/core/kind.ts",
    "src/proxy/handler.ts",
    "src/proxy/forward.ts",
    "src/backends/vllm/vllm_backend.ts",
    "examples/server.ts",
  ]);
  const clean: Record<string, string> = {
    "tests/architecture_test.ts": "",
    "tests/_kit/hang.ts": "",
    "tests/fixtures/plugin.ts": "",
    "tests/conformance/oracle_test.ts": "",
    "tests/core/budget_test.ts": "",
    "tests/core/budget_kinds_test.ts":
      "// Covers: src/core/budget.ts, src/core/kind.ts\nimport {} from 'x';",
    "tests/proxy/handler_test.ts":
      "// Covers: src/proxy/handler.ts, src/proxy/forward.ts\n",
    "tests/proxy/_fixture.ts": "",
    "tests/backends/vllm/vllm_backend_test.ts": "",
    "tests/examples/server_test.ts": "",
  };
  const check = (files: Record<string, string>) =>
    checkTestLayout(
      new Map(Object.entries(files)),
      sources,
      TEST_LAYOUT_OF_TREE,
    );

  await t.step("a tree that keeps every rule passes", () => {
    deepStrictEqual(check(clean), []);
  });

  await t.step("a test folder that mirrors no source folder", () => {
    deepStrictEqual(check({ ...clean, "tests/prxy/handler_test.ts": "" }), [
      "tests/prxy/ mirrors no source folder: src/prxy/ does not exist",
    ]);
  });

  await t.step("a nested test folder that mirrors no source folder", () => {
    deepStrictEqual(
      check({
        ...clean,
        "tests/backends/tgi/tgi_backend_test.ts": "",
        "tests/backends/tgi/payload_test.ts": "",
      }),
      [
        "tests/backends/tgi/ mirrors no source folder: src/backends/tgi/ does not exist",
      ],
    );
  });

  await t.step("a test named after no module, without a Covers line", () => {
    deepStrictEqual(
      check({ ...clean, "tests/core/budget_hooks_test.ts": "" }),
      [
        "tests/core/budget_hooks_test.ts names no module: src/core/budget_hooks.ts does not exist, and its header names none it covers",
      ],
    );
  });

  await t.step("a Covers line below the code does not count", () => {
    const late = "import {} from 'x';\n// Covers: src/core/budget.ts\n";
    deepStrictEqual(
      check({ ...clean, "tests/core/budget_late_test.ts": late }),
      [
        "tests/core/budget_late_test.ts names no module: src/core/budget_late.ts does not exist, and its header names none it covers",
      ],
    );
  });

  await t.step("a Covers line naming a module that does not exist", () => {
    deepStrictEqual(
      check({
        ...clean,
        "tests/proxy/handler_test.ts":
          "// Covers: src/proxy/handler.ts, src/proxy/gone.ts\n",
      }),
      ["tests/proxy/handler_test.ts covers modules that do not exist: src/proxy/gone.ts"],
    );
  });

  await t.step("a Covers line naming no module of the mirrored folder", () => {
    deepStrictEqual(
      check({
        ...clean,
        "tests/proxy/budget_flow_test.ts": "// Covers: src/core/budget.ts\n",
      }),
      [
        "tests/proxy/budget_flow_test.ts covers no module of src/proxy/, the folder it mirrors",
      ],
    );
  });

  await t.step("a test of an example named after no example", () => {
    deepStrictEqual(check({ ...clean, "tests/examples/demo_test.ts": "" }), [
      "tests/examples/demo_test.ts names no module: examples/demo.ts does not exist, and its header names none it covers",
    ]);
  });

  await t.step("a helper at the top of tests/", () => {
    deepStrictEqual(check({ ...clean, "tests/_hang.ts": "" }), [
      "tests/_hang.ts is a helper at the top of tests/: helpers live in tests/_kit/",
    ]);
  });

  await t.step("a test at the top of tests/ named after a module", () => {
    deepStrictEqual(
      check({
        ...clean,
        "tests/handler_test.ts": "",
        "tests/server_test.ts": "",
      }),
      [
        "tests/handler_test.ts is named after src/proxy/handler.ts: it belongs in tests/proxy/",
        "tests/server_test.ts is named after examples/server.ts: it belongs in tests/examples/",
      ],
    );
  });
});

Deno.test("coveredModules() reads the Covers line among the comments that open a file", () => {
  deepStrictEqual(
    coveredModules("// Covers: src/a.ts, src/b/c.ts\nimport {} from 'x';"),
    ["src/a.ts", "src/b/c.ts"],
  );
  deepStrictEqual(
    coveredModules("/**\n * A test.\n */\n\n// Covers: src/a.ts\n"),
    ["src/a.ts"],
  );
  strictEqual(coveredModules("// A test.\nimport {} from 'x';"), undefined);
  strictEqual(
    coveredModules("const a = 1;\n// Covers: src/a.ts\n"),
    undefined,
  );
});
