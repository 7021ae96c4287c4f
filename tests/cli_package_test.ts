/**
 * The command line as the packages publish it: only the files
 * `deno publish` would upload of the root package and of the engine it
 * depends on, run through a `file:` specifier, with the packages' own
 * deno.json. An import of an unpublished file (tests/, examples/, tools/)
 * fails here.
 */
import { ok, strictEqual } from "node:assert/strict";
import { dirname, join } from "node:path";
import { serveFakeUpstream } from "../src/testing/mod.ts";
import { collect, freePort } from "./_kit/cli_process.ts";

const ROOT = new URL("..", import.meta.url).pathname;

/**
 * The files `deno publish --dry-run` lists for the package whose folder is
 * `member` (the root's by default), relative to the project root.
 */
async function publishedFiles(member = "."): Promise<string[]> {
  const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
    args: ["publish", "--dry-run", "--allow-dirty", "--no-check"],
    cwd: join(ROOT, member),
    env: { NO_COLOR: "1" },
  }).output();
  const text = new TextDecoder().decode(stdout) +
    new TextDecoder().decode(stderr);
  strictEqual(code, 0, text);
  return [...text.matchAll(/^\s+file:\/\/(\S+) \(/gm)].map((match) =>
    match[1]!.slice(ROOT.length)
  );
}

Deno.test("incontext serve runs from the files the package publishes", async () => {
  const root = await publishedFiles();
  ok(root.includes("src/cli/mod.ts"), root.join(" "));
  ok(
    !root.some((file) => /^(tests|examples|tools|bench|packages)\//.test(file)),
  );
  const engine = await publishedFiles("packages/engine");
  ok(engine.includes("packages/engine/mod.ts"), engine.join(" "));
  const files = [...root, ...engine];
  const copy = await Deno.makeTempDir();
  try {
    for (const file of files) {
      await Deno.mkdir(dirname(join(copy, file)), { recursive: true });
      await Deno.copyFile(join(ROOT, file), join(copy, file));
    }
    await using upstream = await serveFakeUpstream({ maxModelLen: 65536 });
    const port = freePort();
    const child = new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "-A",
        "--config",
        join(copy, "deno.json"),
        `file://${join(copy, "src/cli/mod.ts")}`,
        "serve",
        "--upstream",
        upstream.url,
        "--listen",
        `127.0.0.1:${port}`,
      ],
      cwd: copy,
      env: {
        NO_COLOR: "1",
        INCONTEXT_TOKENIZER_URL: upstream.tokenizeUrl,
        INCONTEXT_CONTEXT_LENGTH: "65536",
        INCONTEXT_COMPRESSION_WINDOW_TOKENS: "55705",
      },
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const stdout = collect(child.stdout);
    const stderr = collect(child.stderr);
    try {
      await stdout.waitFor(/listening on/);
      const response = await fetch(
        `http://127.0.0.1:${port}/v1/chat/completions`,
        {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({
            model: "m",
            max_tokens: 65536,
            messages: [{ role: "user", content: "Hi" }],
          }),
        },
      );
      strictEqual(response.status, 200, stderr.text);
      strictEqual(response.headers.get("x-incontext-action"), "set");
      const prompt = Number(response.headers.get("x-incontext-prompt-tokens"));
      strictEqual(
        Number(response.headers.get("x-incontext-max-tokens")),
        55705 - prompt,
      );
      await response.body?.cancel();
    } finally {
      child.kill("SIGTERM");
      const status = await child.status;
      await Promise.all([stdout.done, stderr.done]);
      strictEqual(status.code, 0, stderr.text);
    }
  } finally {
    await Deno.remove(copy, { recursive: true });
  }
});
