/**
 * The README as a new user follows it: short enough to read, the demo's
 * table and pointers as it shows them, and the commands of "Try the proxy"
 * run as pasted, with `npx --yes deno@2.9.6` standing for this Deno and
 * free ports for 8000 and 8787 (other runs may hold those).
 */
import { ok, strictEqual } from "node:assert/strict";
import { collect, freePort } from "./_kit/cli_process.ts";
import { DEMO_LISTEN } from "../src/cli/demo_upstream/settings.ts";

const ROOT = new URL("../", import.meta.url);
const README = await Deno.readTextFile(new URL("README.md", ROOT));

/** The text of the README's `## title` section. */
function section(title: string): string {
  const start = README.indexOf(`\n## ${title}\n`);
  ok(start !== -1, `README.md has a section "${title}"`);
  const end = README.indexOf("\n## ", start + 1);
  return README.slice(start, end === -1 ? undefined : end);
}

/** The code blocks of `text` fenced as `lang` (`""` for bare fences). */
function blocks(text: string, lang: string): string[] {
  const found: string[] = [];
  let open: { lang: string; lines: string[] } | undefined;
  for (const line of text.split("\n")) {
    if (open === undefined) {
      if (line.startsWith("```")) open = { lang: line.slice(3), lines: [] };
    } else if (line === "```") {
      if (open.lang === lang) found.push(`${open.lines.join("\n")}\n`);
      open = undefined;
    } else open.lines.push(line);
  }
  return found;
}

Deno.test("the README is under 15 KB", () => {
  const bytes = new TextEncoder().encode(README).length;
  ok(bytes < 15_000, `README.md is ${bytes} bytes`);
});

Deno.test("task start prints the README's table and points at the section that tries the proxy", async () => {
  const output = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--allow-net=127.0.0.1",
      "--allow-read",
      "--allow-env",
      "examples/demo.ts",
    ],
    cwd: ROOT,
    env: { NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const stdout = new TextDecoder().decode(output.stdout);
  strictEqual(output.code, 0, new TextDecoder().decode(output.stderr));
  const table = blocks(section("The two commands"), "")[0] ?? "";
  const rows = table.trim().split("\n");
  ok(rows.length >= 4, table);
  for (const row of rows) ok(stdout.includes(`${row}\n`), row);
  ok(stdout.includes("npx --yes deno@2.9.6 task demo-upstream"), stdout);
  ok(stdout.includes('(README.md, "Try the proxy")'), stdout);
  section("Try the proxy");
});

/** A shell command line running in its own process group, its output collected. */
function spawnShell(script: string) {
  const child = new Deno.Command("sh", {
    args: ["-c", script],
    cwd: ROOT,
    env: { NO_COLOR: "1" },
    detached: true,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const stdout = collect(child.stdout);
  const stderr = collect(child.stderr);
  return {
    child,
    stdout,
    stderr,
    async [Symbol.asyncDispose]() {
      try {
        Deno.kill(-child.pid, "SIGKILL");
      } catch {
        // The group has exited.
      }
      await child.status;
      await Promise.all([stdout.done, stderr.done]);
    },
  };
}

Deno.test("the README's 'Try the proxy' works as pasted: the demo upstream, the proxy in front of it, curl", async () => {
  const text = section("Try the proxy");
  const [upstream, proxy, request] = blocks(text, "sh");
  const [expected] = blocks(text, "");
  ok(upstream && proxy && request && expected, text);
  ok(text.includes(DEMO_LISTEN), "the README names the default address");
  const upstreamPort = freePort();
  const proxyPort = freePort();
  const deno = `'${Deno.execPath().replaceAll("'", "'\\''")}'`;
  const local = (script: string) =>
    script.replaceAll("npx --yes deno@2.9.6", deno)
      .replaceAll("127.0.0.1:8000", `127.0.0.1:${upstreamPort}`)
      .replaceAll("127.0.0.1:8787", `127.0.0.1:${proxyPort}`)
      .replaceAll("\\\n", " ")
      .trim();
  // The README starts the stand-in at its default address, DEMO_LISTEN.
  ok(!upstream.includes("--listen"), upstream);
  await using demo = spawnShell(
    `${local(upstream)} --listen 127.0.0.1:${upstreamPort}`,
  );
  await demo.stdout.waitFor(/listening on/);
  await using serve = spawnShell(local(proxy));
  const started = await serve.stdout.waitFor(/listening on|invalid/);
  ok(started.includes("listening on"), started + serve.stderr.text);
  const curl = await new Deno.Command("sh", {
    args: ["-c", local(request)],
    cwd: ROOT,
    stdout: "piped",
    stderr: "piped",
  }).output().catch((error) => {
    throw new Error(
      `curl could not run (apt-get install -y curl): ${error}`,
    );
  });
  const answer = new TextDecoder().decode(curl.stdout);
  strictEqual(curl.code, 0, new TextDecoder().decode(curl.stderr));
  ok(answer.startsWith("HTTP/1.1 200"), answer);
  for (const line of expected.trim().split("\n")) {
    ok(answer.includes(`${line}\r\n`), `${line} in:\n${answer}`);
  }
  // Ctrl-C in each terminal: SIGINT to its whole process group, which
  // ends (the shell and `deno task` report it with 130, as terminals do).
  Deno.kill(-serve.child.pid, "SIGINT");
  Deno.kill(-demo.child.pid, "SIGINT");
  await serve.child.status;
  await demo.child.status;
  await serve.stdout.done;
  ok(
    serve.stdout.text.includes("stopping: finishing requests in flight"),
    serve.stdout.text,
  );
});
