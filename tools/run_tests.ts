/**
 * Runs one suite stage by stage: `test` (what `deno task test` runs) or
 * `conformance` (what `deno task conformance` runs).
 *
 * Every stage runs even when an earlier one failed, so one run shows every
 * problem. Each stage is announced before it starts; its output is captured
 * and shown only when it fails (for the tests: the failures in full, from
 * Deno's ERRORS and FAILURES sections on). The run ends with one line naming
 * each stage and its result, then the tests' totals alone on the last line,
 * `N passed, N failed`; the exit code is 1 when any stage failed.
 *
 *     deno run --allow-run --allow-read --allow-env tools/run_tests.ts test
 *
 * @module
 */

const ROOT = new URL("../", import.meta.url);
const TESTS_CONFIG = "tests/deno.json";
const TEST_PERMISSIONS = [
  "--allow-net=127.0.0.1,localhost",
  "--allow-read",
  "--allow-env",
  "--allow-run",
  "--allow-sys=hostname",
  // Tests that install or copy the package work in temporary folders only.
  `--allow-write=${Deno.env.get("TMPDIR") ?? "/tmp"}`,
];

/** One stage: a name and the Deno commands it runs, in order. */
interface Stage {
  readonly name: string;
  readonly commands: readonly (readonly string[])[];
  /** Whether the stage runs `deno test`, whose totals the run adds up. */
  readonly counts?: boolean;
}

interface StageResult {
  readonly name: string;
  readonly ok: boolean;
  readonly seconds: number;
  readonly passed: number;
  readonly failed: number;
}

/** The workspace's members beside the root package: their folders. */
const MEMBERS = ["packages/engine"];

/** The entry points of every package, as each deno.json exports them. */
async function entryPoints(): Promise<string[]> {
  const entries: string[] = [];
  for (const folder of [".", ...MEMBERS]) {
    const manifest = JSON.parse(
      await Deno.readTextFile(new URL(`${folder}/deno.json`, ROOT)),
    ) as { exports: Record<string, string> };
    for (const entry of Object.values(manifest.exports)) {
      entries.push(folder === "." ? entry : `${folder}/${entry.slice(2)}`);
    }
  }
  return entries;
}

/**
 * The test modules of `task test`: every `*_test.ts` under tests/ but those
 * of tests/conformance/ (which need oracles) and tests/fixtures/.
 */
async function testModules(dir = "tests"): Promise<string[]> {
  const found: string[] = [];
  for await (const entry of Deno.readDir(new URL(`${dir}/`, ROOT))) {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory) {
      if (path !== "tests/conformance" && path !== "tests/fixtures") {
        found.push(...await testModules(path));
      }
    } else if (entry.name.endsWith("_test.ts")) found.push(path);
  }
  return found.sort();
}

async function testSuite(): Promise<Stage[]> {
  return [
    { name: "fmt", commands: [["fmt", "--check"]] },
    { name: "lint", commands: [["lint"]] },
    {
      name: "check",
      commands: [
        ["check", "mod.ts", "src/", ...MEMBERS, "examples/", "tools/"],
        ["check", "--config", TESTS_CONFIG, "tests/", "bench/"],
      ],
    },
    {
      name: "test",
      counts: true,
      commands: [[
        "test",
        "--config",
        TESTS_CONFIG,
        ...TEST_PERMISSIONS,
        "--doc",
        "--parallel",
        "--reporter=dot",
        ...await testModules(),
        // The code blocks of the documentation and of every JSDoc example.
        "mod.ts",
        "src/",
        ...MEMBERS,
        "README.md",
        "docs/",
      ]],
    },
    { name: "doc lint", commands: [["doc", "--lint", ...await entryPoints()]] },
    {
      name: "publish dry run",
      commands: [
        ["publish", "--dry-run", "--allow-dirty"],
        ...MEMBERS.map((folder) => [
          "publish",
          "--dry-run",
          "--allow-dirty",
          "--config",
          `${folder}/deno.json`,
        ]),
      ],
    },
    {
      name: "Node proof",
      commands: [[
        "run",
        "--config",
        TESTS_CONFIG,
        "-A",
        "tests/node/prove.ts",
      ]],
    },
  ];
}

function conformanceSuite(): Stage[] {
  return [{
    name: "conformance",
    counts: true,
    commands: [[
      "test",
      "--config",
      TESTS_CONFIG,
      // The oracles are programs of their own (a Node-API addon, Python,
      // redis-server, Chromium through playwright-core, which probes files
      // Deno gives only to --allow-all): this suite runs with every permission.
      "--allow-all",
      "--reporter=dot",
      "tests/conformance/",
    ]],
  }];
}

/** Runs `deno <args>` in the repository root, stdout and stderr captured together. */
async function run(
  args: readonly string[],
): Promise<{ ok: boolean; output: string }> {
  const child = new Deno.Command(Deno.execPath(), {
    args: [...args],
    cwd: ROOT,
    env: { NO_COLOR: "1" },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const chunks: string[] = [];
  const collect = async (stream: ReadableStream<Uint8Array>) => {
    for await (const text of stream.pipeThrough(new TextDecoderStream())) {
      chunks.push(text);
    }
  };
  const [status] = await Promise.all([
    child.status,
    collect(child.stdout),
    collect(child.stderr),
  ]);
  return { ok: status.success, output: chunks.join("") };
}

/** Deno's closing line: `ok | 12 passed (3 steps) | 0 failed (1s)`. */
function totals(
  output: string,
): { passed: number; failed: number } | undefined {
  const match = /^(?:ok|FAILED) \| (\d+) passed.*\| (\d+) failed/m.exec(output);
  return match === null
    ? undefined
    : { passed: Number(match[1]), failed: Number(match[2]) };
}

/** What to show of a failed stage: for tests, the failures from Deno's report on. */
function failureReport(output: string, counts: boolean): string {
  if (!counts) return output;
  const start = output.search(/^ *(ERRORS|FAILURES) *$/m);
  return start === -1 ? output : output.slice(start);
}

/** The command as announced: a list of test modules is shown as its count. */
function shown(args: readonly string[]): string {
  const modules = args.filter((arg) => arg.endsWith("_test.ts"));
  if (modules.length <= 3) return args.join(" ");
  const rest = args.filter((arg) => !arg.endsWith("_test.ts"));
  return `${rest.join(" ")} (and ${modules.length} *_test.ts modules)`;
}

async function runStage(
  stage: Stage,
  index: number,
  of: number,
): Promise<StageResult> {
  const started = performance.now();
  let ok = true;
  let passed = 0;
  let failed = 0;
  for (const args of stage.commands) {
    console.log(`\n== [${index}/${of}] ${stage.name}: deno ${shown(args)}`);
    const result = await run(args);
    if (stage.counts) {
      const found = totals(result.output);
      passed += found?.passed ?? 0;
      // A run that ended before Deno's report (a type error) counts as a failure.
      failed += found?.failed ?? (result.ok ? 0 : 1);
    }
    if (!result.ok) {
      ok = false;
      console.log(
        failureReport(result.output, stage.counts === true).trimEnd(),
      );
    }
  }
  const seconds = (performance.now() - started) / 1000;
  const counted = stage.counts ? `, ${passed} passed, ${failed} failed` : "";
  console.log(
    `   ${stage.name}: ${ok ? "ok" : "FAILED"} (${
      seconds.toFixed(1)
    } s${counted})`,
  );
  return { name: stage.name, ok, seconds, passed, failed };
}

async function main(suite: string | undefined): Promise<number> {
  const stages = suite === "test"
    ? await testSuite()
    : suite === "conformance"
    ? conformanceSuite()
    : undefined;
  if (stages === undefined) {
    console.error("usage: tools/run_tests.ts test|conformance");
    return 2;
  }
  const started = performance.now();
  const results: StageResult[] = [];
  for (const [i, stage] of stages.entries()) {
    results.push(await runStage(stage, i + 1, stages.length));
  }
  const minutes = (performance.now() - started) / 60_000;
  const passed = results.reduce((sum, r) => sum + r.passed, 0);
  const failed = results.reduce((sum, r) => sum + r.failed, 0);
  console.log(
    `\n${suite}: ${
      results.map((r) => `${r.name} ${r.ok ? "ok" : "FAILED"}`).join(", ")
    } (${minutes.toFixed(1)} min)`,
  );
  console.log(`${passed} passed, ${failed} failed`);
  return results.every((r) => r.ok) ? 0 : 1;
}

Deno.exit(await main(Deno.args[0]));
