import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import { join } from "node:path";
import { ConfigError } from "../src/core/config_error.ts";
import {
  askHermes,
  type HermesAnswer,
  watchHermesWindow,
} from "../src/bridges/hermes/mod.ts";
import {
  findHermesPython,
  shebangInterpreter,
} from "../src/bridges/hermes/python.ts";

import {
  ENV,
  home,
  mkdtemp,
  PATH,
  rm,
  standin,
  writeFile,
} from "./_hermes_home.ts";

const LOCAL = {
  model: {
    default: "qwen3-coder",
    provider: "custom",
    base_url: "http://127.0.0.1:8787/v1",
    context_length: 65_536,
  },
  compression: { threshold: 0.5 },
};

async function failure(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    ok(error instanceof ConfigError, String(error));
    strictEqual(error.issues.length, 1);
    ok(!(error.stack ?? "").includes("Traceback"));
    const [issue] = error.issues;
    return `${issue!.variable} ${issue!.rule}`;
  }
  throw new Error("expected a ConfigError");
}

Deno.test("askHermes() reads W and the context length from the installed Hermes", async (t) => {
  await using dir = await home(LOCAL);
  await t.step("Hermes' own compressor for model.default", async () => {
    const answer = await askHermes({ configPath: dir.config, env: ENV });
    // 0.75 after Hermes' small-context raise would give 49,152; the stand-in
    // applies none, so W is its own number, not a mirrored one.
    strictEqual(answer.window, standin(65_536, 0.5));
    strictEqual(answer.contextLength, 65_536);
    strictEqual(answer.hermesVersion, "0.0.0-standin");
    strictEqual(answer.model, "qwen3-coder");
    strictEqual(answer.provider, "custom");
    strictEqual(answer.baseUrl, "http://127.0.0.1:8787/v1");
    strictEqual(answer.compressionEnabled, true);
    deepStrictEqual(answer.python, {
      command: "python3",
      source: "python3 on PATH",
    });
  });
  await t.step(
    "each named model with Hermes' per-model threshold",
    async () => {
      const answer = await askHermes({
        configPath: dir.config,
        env: ENV,
        models: ["standin-wide", "other"],
      });
      deepStrictEqual(answer.models, {
        "qwen3-coder": { window: standin(65_536, 0.5), contextLength: 65_536 },
        "standin-wide": { window: standin(65_536, 0.9), contextLength: 65_536 },
        other: { window: standin(65_536, 0.5), contextLength: 65_536 },
      });
    },
  );
  await t.step(
    "the output reservation: HERMES_MAX_TOKENS over model.max_tokens",
    async () => {
      await dir.write({
        ...LOCAL,
        model: { ...LOCAL.model, max_tokens: 4096 },
      });
      const fromConfig = await askHermes({ configPath: dir.config, env: ENV });
      strictEqual(fromConfig.window, standin(65_536, 0.5, 4096));
      strictEqual(fromConfig.maxTokens, 4096);
      // An unset variable stays unset in the script's environment.
      const unset = await askHermes({
        configPath: dir.config,
        env: { ...ENV, HERMES_MAX_TOKENS: undefined },
      });
      strictEqual(unset.window, standin(65_536, 0.5, 4096));
      const fromEnv = await askHermes({
        configPath: dir.config,
        env: { ...ENV, HERMES_MAX_TOKENS: "8192" },
      });
      strictEqual(fromEnv.window, standin(65_536, 0.5, 8192));
    },
  );
  await t.step("compression disabled -> the context length", async () => {
    await dir.write({ ...LOCAL, compression: { enabled: false } });
    const answer = await askHermes({ configPath: dir.config, env: ENV });
    strictEqual(answer.window, 65_536);
    strictEqual(answer.compressionEnabled, false);
  });
  await t.step(
    "INCONTEXT_CONTEXT_LENGTH when the config names none",
    async () => {
      await dir.write({ model: { default: "m" } });
      const answer = await askHermes({
        configPath: dir.config,
        env: ENV,
        contextLength: 131_072,
      });
      strictEqual(answer.contextLength, 131_072);
      strictEqual(answer.window, standin(131_072, 0.5));
    },
  );
});

Deno.test("askHermes() reports every failure clearly", async (t) => {
  await using dir = await home(LOCAL);
  await t.step("no Python", async () => {
    const text = await failure(
      askHermes({ configPath: dir.config, python: "/nonexistent/python3" }),
    );
    ok(text.startsWith("INCONTEXT_HERMES_PYTHON names no Python"), text);
    ok(text.includes("INCONTEXT_HERMES_RELEASE"), text);
  });
  await t.step("Hermes not importable from it", async () => {
    const text = await failure(
      askHermes({ configPath: dir.config, env: { PATH } }),
    );
    ok(
      text.startsWith(
        "INCONTEXT_HERMES_PYTHON (unset: python3 on PATH) cannot import Hermes (ModuleNotFoundError)",
      ),
      text,
    );
  });
  await t.step("the script timed out", async () => {
    const text = await failure(askHermes({
      configPath: dir.config,
      env: { ...ENV, STANDIN_SLEEP: "60" },
      timeoutSeconds: 0.2,
    }));
    ok(text.includes("did not answer within 0.2 s"), text);
  });
  await t.step("Hermes fails to build its compressor", async () => {
    const text = await failure(askHermes({
      configPath: dir.config,
      env: { ...ENV, STANDIN_FAIL: "1" },
    }));
    strictEqual(
      text,
      "INCONTEXT_HERMES_CONFIG could not be read by Hermes: building its compressor failed (ValueError)",
    );
  });
  await t.step("a context engine other than the compressor", async () => {
    await dir.write({ ...LOCAL, context: { engine: "lcm" } });
    const text = await failure(askHermes({ configPath: dir.config, env: ENV }));
    ok(text.startsWith("INCONTEXT_HERMES_CONFIG (context.engine) selects"));
    ok(text.includes("INCONTEXT_COMPRESSION_WINDOW_TOKENS"), text);
  });
  await t.step("no context length anywhere", async () => {
    await dir.write({ model: { default: "m" } });
    const text = await failure(askHermes({ configPath: dir.config, env: ENV }));
    ok(text.startsWith("INCONTEXT_HERMES_CONFIG (model.context_length)"));
  });
  await t.step("a file Hermes would not read", async () => {
    const text = await failure(
      askHermes({ configPath: `${dir.config}.bak`, env: ENV }),
    );
    ok(text.includes("must name a file called config.yaml"), text);
  });
});

Deno.test("askHermes() gives the script no request content", async () => {
  await using dir = await home(LOCAL);
  const record = join(dir.config, "..", "record.jsonl");
  {
    await askHermes({
      configPath: dir.config,
      env: { ...ENV, STANDIN_RECORD: record },
      models: ["qwen3-coder"],
    });
    const calls = (await Deno.readTextFile(record)).trim().split("\n")
      .map((line) => JSON.parse(line));
    strictEqual(calls.length, 1);
    const [call] = calls;
    // The request: the config path, the models and the context length only.
    deepStrictEqual(JSON.parse(call.argv.at(-1)), {
      config: dir.config,
      models: ["qwen3-coder"],
      context_length: null,
    });
    strictEqual(call.stdin, "");
  }
});

Deno.test("watchHermesWindow() follows config.yaml without a restart", async (t) => {
  await using dir = await home(LOCAL);
  let time = 0;
  const changes: HermesAnswer[] = [];
  const errors: unknown[] = [];
  await using watch = await watchHermesWindow({
    configPath: dir.config,
    env: ENV,
    now: () => time,
    onChange: (answer) => changes.push(answer),
    onError: (error) => errors.push(error),
  });
  const first = watch.current();
  strictEqual(first.window, standin(65_536, 0.5));
  await t.step("checks the file at most once a second", async () => {
    await dir.write({ ...LOCAL, compression: { threshold: 0.8 } });
    time = 999;
    strictEqual(watch.current(), first);
    await watch.settled();
    strictEqual(watch.current(), first);
  });
  await t.step("the old W serves until the new one is known", async () => {
    time = 1000;
    strictEqual(watch.current(), first);
    await watch.settled();
    strictEqual(watch.current().window, standin(65_536, 0.8));
    strictEqual(changes.length, 1);
  });
  await t.step("a change Hermes cannot read keeps the old W", async () => {
    await dir.write({ ...LOCAL, context: { engine: "lcm" } });
    time = 2000;
    watch.current();
    await watch.settled();
    strictEqual(watch.current().window, standin(65_536, 0.8));
    strictEqual(errors.length, 1);
    ok(errors[0] instanceof ConfigError);
  });
  await t.step("an unchanged file is not asked about again", async () => {
    time = 3000;
    watch.current();
    await watch.settled();
    strictEqual(errors.length, 1);
    strictEqual(changes.length, 1);
  });
});

Deno.test("findHermesPython() takes the interpreter of the hermes executable", async (t) => {
  await t.step("shebangInterpreter() reads #! lines", () => {
    strictEqual(
      shebangInterpreter("#!/home/u/.hermes/venv/bin/python3"),
      "/home/u/.hermes/venv/bin/python3",
    );
    strictEqual(shebangInterpreter("#!/usr/bin/env python3"), "python3");
    strictEqual(
      shebangInterpreter("#!/usr/bin/env -S python3.12 -u"),
      "python3.12",
    );
    strictEqual(shebangInterpreter("#!/bin/sh"), undefined);
    strictEqual(shebangInterpreter("ELF"), undefined);
  });
  const dir = await mkdtemp("incontext-path-");
  try {
    await writeFile(join(dir, "hermes"), "#!/opt/hermes/venv/bin/python\n");
    await t.step("INCONTEXT_HERMES_PYTHON first", async () => {
      deepStrictEqual(await findHermesPython("/x/python", dir), {
        command: "/x/python",
        source: "INCONTEXT_HERMES_PYTHON",
      });
    });
    await t.step("then the hermes executable on PATH", async () => {
      deepStrictEqual(
        await findHermesPython(undefined, `/nonexistent:${dir}`),
        {
          command: "/opt/hermes/venv/bin/python",
          source: "the hermes executable on PATH",
        },
      );
    });
    await t.step("else python3", async () => {
      deepStrictEqual(await findHermesPython(undefined, "/nonexistent"), {
        command: "python3",
        source: "python3 on PATH",
      });
    });
  } finally {
    await rm(dir);
  }
});
