/**
 * The library used from a clone, as docs/library.md says: a project in a
 * folder outside the clone imports the package by name, with the clone in
 * its `deno.json` `links`, and Deno resolves the package's own dependencies
 * from the clone's `deno.json`, the engine package of its workspace included.
 */
import { ok, strictEqual } from "node:assert/strict";

const CLONE = new URL("../", import.meta.url).pathname.replace(/\/$/, "");

async function runIn(dir: string, args: string[]) {
  const output = await new Deno.Command(Deno.execPath(), {
    args,
    cwd: dir,
    env: { NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decoder = new TextDecoder();
  return {
    code: output.code,
    stdout: decoder.decode(output.stdout),
    stderr: decoder.decode(output.stderr),
  };
}

Deno.test("a project outside the clone imports the package by name through links", async () => {
  const project = await Deno.makeTempDir({ prefix: "incontext-links-" });
  try {
    ok(!project.startsWith(`${CLONE}/`), project);
    await Deno.writeTextFile(
      `${project}/deno.json`,
      JSON.stringify({
        imports: {
          "@incontext/incontext": "jsr:@incontext/incontext@^0.1.0",
        },
        links: [CLONE],
      }),
    );
    await Deno.writeTextFile(
      `${project}/main.ts`,
      `import { budget } from "@incontext/incontext";
import { FakeBackend } from "@incontext/incontext/testing";
import { LocalBackend } from "@incontext/incontext/local";
const result = await budget(
  { model: "m", max_tokens: 65536, messages: [{ role: "user", content: "Hi" }] },
  { window: 55705, contextLength: 65536, backend: new FakeBackend({ count: 1705 }) },
);
console.log(result.action, result.request.max_tokens);
// The local backend counts with the engine, the clone's workspace member.
const local = new LocalBackend({ dir: "${CLONE}/tests/fixtures/model_folder", cache: null });
console.log(await local.count({ messages: [{ role: "user", content: "Hi" }] }, { contextLength: 4096 }));
await local[Symbol.asyncDispose]();
`,
    );
    const linked = await runIn(project, ["run", "--allow-read", "main.ts"]);
    strictEqual(linked.code, 0, linked.stderr);
    const [decided, counted] = linked.stdout.trim().split("\n");
    strictEqual(decided, "set 54000");
    ok(Number(counted) > 0, linked.stdout);
    // Without links, a path import cannot resolve the package's own imports:
    // what the documentation says links are for.
    await Deno.writeTextFile(
      `${project}/by_path.ts`,
      `import { budget } from "${CLONE}/mod.ts";\nconsole.log(typeof budget);\n`,
    );
    await Deno.writeTextFile(`${project}/deno.json`, "{}");
    const unlinked = await runIn(project, ["run", "by_path.ts"]);
    strictEqual(unlinked.code, 1);
    ok(
      unlinked.stderr.includes('Import "@logtape/logtape" not a dependency'),
      unlinked.stderr,
    );
  } finally {
    await Deno.remove(project, { recursive: true });
  }
});
