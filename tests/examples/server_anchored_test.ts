// Covers: examples/server.ts, src/backends/anchored/anchored_backend.ts
import { ok, strictEqual } from "node:assert/strict";
import { serveFakeUpstream } from "../../src/testing/mod.ts";
import { freePort, readUntil } from "../_kit/cli_process.ts";

const SERVER = new URL("../../examples/server.ts", import.meta.url).pathname;
const CONFIG = new URL("../../deno.json", import.meta.url).pathname;
const PLUGIN = new URL("../fixtures/anchored_plugin.ts", import.meta.url).href;

Deno.test("examples/server.ts hands an AnchoredBackend's store to the proxy", async () => {
  await using upstream = await serveFakeUpstream({ maxModelLen: 65536 });
  const port = freePort();
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--config", CONFIG, SERVER],
    env: {
      NO_COLOR: "1",
      INCONTEXT_UPSTREAM_URL: upstream.url,
      INCONTEXT_LISTEN: `127.0.0.1:${port}`,
      INCONTEXT_BACKEND: "anchored-test",
      INCONTEXT_BACKEND_MODULES: PLUGIN,
      INCONTEXT_CONTEXT_LENGTH: "65536",
      INCONTEXT_COMPRESSION_WINDOW_TOKENS: "55705",
    },
    clearEnv: true,
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const stdout = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  const stderr = child.stderr.pipeThrough(new TextDecoderStream());
  const errors = (async () => {
    let text = "";
    for await (const chunk of stderr) text += chunk;
    return text;
  })();
  try {
    const started = await readUntil(stdout, /listening on/);
    ok(started.includes("backend=usage-anchor"), started);
    const post = (messages: unknown[]) =>
      fetch(`http://127.0.0.1:${port}/v1/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ model: "m", messages }),
      });
    const turn1 = [{ role: "user", content: "Hello" }];
    const first = await (await post(turn1)).json();
    const second = await post([
      ...turn1,
      first.choices[0].message,
      { role: "user", content: "More" },
    ]);
    await second.body?.cancel();
    strictEqual(second.headers.get("x-incontext-source"), "usage-anchor");
    // Anchored on the first response's usage: the proxy recorded into the backend's store.
    strictEqual(
      Number(second.headers.get("x-incontext-prompt-tokens")),
      first.usage.prompt_tokens + first.usage.completion_tokens + 1,
    );
  } finally {
    child.kill("SIGTERM");
    const status = await child.status;
    stdout.releaseLock();
    await child.stdout.cancel().catch(() => {});
    strictEqual(status.code, 0, await errors);
  }
});
