// Covers: src/cli/serve/command.ts, src/cli/setup/settings.ts, src/bridges/hermes/live.ts
import { ok, strictEqual } from "node:assert/strict";
import OpenAI from "openai";
import { serveFakeUpstream } from "../../../src/testing/mod.ts";
import { ENV, home, STANDIN, standin } from "../../_kit/hermes_home.ts";
import { freePort, readUntil } from "../../_kit/cli_process.ts";

const CLI = new URL("../../../src/cli/mod.ts", import.meta.url).pathname;
const CONFIG = new URL("../../../deno.json", import.meta.url).pathname;
const CANARY = "prompt-canary-5f2c";

const LOCAL = {
  model: {
    default: "qwen3-coder",
    provider: "custom",
    base_url: "http://127.0.0.1:8787/v1",
    context_length: 65_536,
  },
  compression: { threshold: 0.5, model_thresholds: { "standin-wide": 0.9 } },
};

function serve(args: string[], env: Record<string, string>) {
  return new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--config", CONFIG, CLI, "serve", ...args],
    env: { NO_COLOR: "1", ...ENV, ...env },
    clearEnv: true,
    stdout: "piped",
    stderr: "piped",
  });
}

Deno.test("incontext serve --hermes-config asks the installed Hermes and follows its config", async (t) => {
  await using upstream = await serveFakeUpstream({ maxModelLen: 65_536 });
  await using dir = await home(LOCAL);
  const record = `${dir.config}.calls`;
  const port = freePort();
  const child = serve([
    "--upstream",
    upstream.url,
    "--listen",
    `127.0.0.1:${port}`,
    "--hermes-config",
    dir.config,
    "--hermes-models",
    "standin-wide",
  ], {
    INCONTEXT_TOKENIZER_URL: upstream.tokenizeUrl,
    STANDIN_RECORD: record,
  }).spawn();
  const stdout = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  const stderr = child.stderr.pipeThrough(new TextDecoderStream());
  const errors = (async () => {
    let text = "";
    for await (const chunk of stderr) text += chunk;
    return text;
  })();
  try {
    const W = standin(65_536, 0.5);
    const started = await readUntil(stdout, /listening on/);
    await t.step(
      "the start-up log names Hermes' version, W, C and the source",
      () => {
        ok(
          started.includes(`hermes window=${W} context_length=65536`),
          started,
        );
        ok(
          started.includes(
            `Hermes 0.0.0-standin agent: run_agent.AIAgent's context_compressor (${STANDIN}run_agent.py; version from hermes_cli.__version__; Python: python3 on PATH)`,
          ),
          started,
        );
        ok(started.includes(`"qwen3-coder", "standin-wide"`), started);
        ok(started.includes(`window=${W} context_length=65536`), started);
      },
    );
    const sdk = new OpenAI({
      baseURL: `http://127.0.0.1:${port}/v1`,
      apiKey: "sk-test",
      maxRetries: 0,
    });
    const ask = (model: string, cap = 65_536) =>
      sdk.chat.completions.create({
        model,
        max_tokens: cap,
        messages: [{ role: "user", content: `Hello ${CANARY}` }],
      }).withResponse();
    await t.step("model.default is budgeted against Hermes' W", async () => {
      const { data, response } = await ask("qwen3-coder");
      strictEqual(response.headers.get("x-incontext-action"), "set");
      const prompt = data.usage!.prompt_tokens;
      strictEqual(
        Number(response.headers.get("x-incontext-max-tokens")),
        W - prompt,
      );
    });
    await t.step("a named model against its own W", async () => {
      const { data, response } = await ask("standin-wide");
      const prompt = data.usage!.prompt_tokens;
      strictEqual(
        Number(response.headers.get("x-incontext-max-tokens")),
        standin(65_536, 0.9) - prompt,
      );
    });
    await t.step("other models pass untouched", async () => {
      const { response } = await ask("llama", 1000);
      strictEqual(response.headers.get("x-incontext-action"), "unchanged");
      ok(response.headers.get("x-incontext-reason")?.includes("(model)"));
    });
    await t.step(
      "a changed config.yaml is followed without a restart",
      async () => {
        await dir.write({ ...LOCAL, compression: { threshold: 0.8 } });
        const next = standin(65_536, 0.8);
        // The file is checked at most once a second, in the background of a
        // request; the log line tells when the new W is in force.
        const changed = readUntil(stdout, /hermes config changed/);
        let done = false;
        changed.then(() => done = true);
        while (!done) {
          await (await fetch(`http://127.0.0.1:${port}/incontext/context`))
            .body?.cancel();
          let timer: ReturnType<typeof setTimeout> | undefined;
          await Promise.race([
            changed,
            new Promise((wake) => timer = setTimeout(wake, 250)),
          ]);
          clearTimeout(timer);
        }
        const view = await (await fetch(
          `http://127.0.0.1:${port}/incontext/context`,
        )).json();
        const window = view.window;
        strictEqual(window, next);
        const { data, response } = await ask("qwen3-coder");
        strictEqual(
          Number(response.headers.get("x-incontext-max-tokens")),
          next - data.usage!.prompt_tokens,
        );
      },
    );
    await t.step("no request content ever reaches the script", async () => {
      const calls = await Deno.readTextFile(record);
      // Two questions: at start-up and after the change.
      ok(calls.trim().split("\n").length >= 2);
      ok(!calls.includes(CANARY));
      ok(!calls.includes("Hello"));
    });
  } finally {
    child.kill("SIGTERM");
    await child.status;
    await stdout.cancel();
    await errors;
  }
});

Deno.test("incontext serve --hermes-config fails at start-up naming what to fix", async (t) => {
  await using dir = await home(LOCAL);
  const run = async (env: Record<string, string>, args: string[] = []) => {
    const { code, stderr } = await serve([
      "--upstream",
      "http://127.0.0.1:9",
      "--hermes-config",
      dir.config,
      ...args,
    ], { INCONTEXT_TOKENIZER_URL: "http://127.0.0.1:9/tokenize", ...env })
      .output();
    const text = new TextDecoder().decode(stderr);
    strictEqual(code, 2, text);
    ok(!text.includes("Traceback") && !text.includes("    at "), text);
    return text;
  };
  await t.step("no Python", async () => {
    const text = await run({}, ["--hermes-python", "/nonexistent/python3"]);
    ok(
      text.includes(
        "--hermes-python (INCONTEXT_HERMES_PYTHON) names no Python interpreter",
      ),
      text,
    );
  });
  await t.step("Hermes not importable", async () => {
    const text = await run({ PYTHONPATH: "/nonexistent" });
    ok(text.includes("cannot import Hermes (ModuleNotFoundError)"), text);
  });
  await t.step("a context engine of its own", async () => {
    await dir.write({ ...LOCAL, context: { engine: "standin-engine" } });
    const text = await run({});
    ok(text.includes("INCONTEXT_HERMES_CONFIG (context.engine) selects"), text);
  });
  await t.step("an invalid config", async () => {
    await dir.write({ ...LOCAL, compression: { threshold: 2 } });
    const text = await run({});
    ok(
      text.includes(
        "INCONTEXT_HERMES_CONFIG (compression.threshold) must be a number greater than 0 and at most 1",
      ),
      text,
    );
  });
  await t.step(
    "INCONTEXT_COMPRESSION_WINDOW_TOKENS overrides Hermes",
    async () => {
      // No Python at all and an engine Hermes would not budget: no question asked.
      await dir.write({ ...LOCAL, context: { engine: "lcm" } });
      const child = serve([
        "--upstream",
        "http://127.0.0.1:9",
        "--listen",
        `127.0.0.1:${freePort()}`,
        "--hermes-config",
        dir.config,
        "--hermes-python",
        "/nonexistent/python3",
        "--window",
        "50000",
        "--context-length",
        "65536",
      ], { INCONTEXT_TOKENIZER_URL: "http://127.0.0.1:9/tokenize" }).spawn();
      const stdout = child.stdout.pipeThrough(new TextDecoderStream())
        .getReader();
      const text = await readUntil(stdout, /listening on/);
      child.kill("SIGTERM");
      await child.status;
      await stdout.cancel();
      await child.stderr.cancel();
      ok(text.includes("window=50000 context_length=65536"), text);
      ok(text.includes("from INCONTEXT_COMPRESSION_WINDOW_TOKENS;"), text);
    },
  );
});

Deno.test("incontext serve --hermes-config warns where W did not come from Hermes' agent as built", async (t) => {
  await using dir = await home(LOCAL);
  /** The start-up log: stdout up to "listening on", and stderr once stopped. */
  const logs = async (env: Record<string, string>) => {
    const child = serve([
      "--upstream",
      "http://127.0.0.1:9",
      "--listen",
      `127.0.0.1:${freePort()}`,
      "--hermes-config",
      dir.config,
    ], { INCONTEXT_TOKENIZER_URL: "http://127.0.0.1:9/tokenize", ...env })
      .spawn();
    const stdout = child.stdout.pipeThrough(new TextDecoderStream())
      .getReader();
    const stderr = new Response(child.stderr).text();
    const started = await readUntil(stdout, /listening on/);
    child.kill("SIGTERM");
    await child.status;
    await stdout.cancel();
    return { started, warnings: await stderr };
  };
  await t.step("Hermes' own threshold function disagrees", async () => {
    const { started, warnings } = await logs({ STANDIN_SKEW: "7" });
    const W = standin(65_536, 0.5);
    ok(started.includes(`hermes window=${W + 7}`), started);
    ok(warnings.includes("hermes self-check"), warnings);
    ok(warnings.includes(`W=${W + 7}`), warnings);
    ok(warnings.includes(`gives ${W}`), warnings);
  });
  await t.step("the agent could not be built offline", async () => {
    const { started, warnings } = await logs({ STANDIN_AGENT_FAIL: "1" });
    ok(
      started.includes(
        "Hermes 0.0.0-standin ContextCompressor built as 0.19's init_agent() does, not its agent: building it raised RuntimeError",
      ),
      started,
    );
    ok(warnings.includes("the agent could not be built offline"), warnings);
  });
  await t.step("no warning for W read from the agent", async () => {
    const { warnings } = await logs({});
    // Only the unreachable upstream and tokenizer are warned about.
    ok(!warnings.includes("incontext.hermes"), warnings);
    ok(warnings.includes("upstream not reachable"), warnings);
  });
});
