// Covers: src/bridges/hermes/ask.ts, src/bridges/hermes/watch.ts, src/bridges/hermes/python.ts
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import { join } from "node:path";
import { ConfigError } from "../../../src/core/config_error.ts";
import {
  askHermes,
  type HermesAnswer,
  watchHermesWindow,
} from "../../../src/bridges/hermes/mod.ts";
import {
  findHermesPython,
  shebangInterpreter,
} from "../../../src/bridges/hermes/python.ts";

import {
  DIST,
  ENV,
  home,
  mkdtemp,
  PATH,
  python,
  rm,
  STANDIN,
  standin,
  writeFile,
} from "../../_kit/hermes_home.ts";

// Every file under a folder, with its size and modification time.
const LISTING = `import os, sys
for root, dirs, files in sorted(os.walk(sys.argv[1])):
    for name in sorted(files):
        path = os.path.join(root, name)
        info = os.stat(path)
        print(path, info.st_size, info.st_mtime_ns)`;

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

const AGENT_FILE = `${STANDIN}run_agent.py`;
const COMPRESSOR_FILE = `${STANDIN}agent/context_compressor.py`;

/** One model's window as the stand-in's agent gives it. */
function fromAgent(window: number, contextLength = 65_536) {
  return {
    window,
    contextLength,
    source: "agent",
    file: AGENT_FILE,
    refused: 0,
    selfCheck: window,
  };
}

Deno.test("askHermes() reads W from the agent the installed Hermes builds", async (t) => {
  await using dir = await home(LOCAL);
  await t.step("model.default's agent", async () => {
    const answer = await askHermes({ configPath: dir.config, env: ENV });
    // 0.75 after Hermes' small-context raise would give 49,152; the stand-in
    // applies none, so W is its own number, not a mirrored one.
    strictEqual(answer.window, standin(65_536, 0.5));
    strictEqual(answer.contextLength, 65_536);
    strictEqual(answer.source, "agent");
    strictEqual(answer.file, AGENT_FILE);
    strictEqual(answer.selfCheck, answer.window);
    strictEqual(answer.hermesVersion, "0.0.0-standin");
    strictEqual(answer.versionSource, "hermes_cli.__version__");
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
    "the agent's own wiring, not one re-derived around the compressor",
    async () => {
      // The stand-in's agent takes the exact model_thresholds entry and caps
      // with threshold_tokens. Wiring the compressor as Hermes 0.18 does
      // gives standin(65,536, 0.5) = 31,534; as 0.19 does, the same (its
      // substring match finds nothing the stand-in's compressor takes), and
      // the auxiliary override would give standin-wide 0.9.
      await dir.write({
        ...LOCAL,
        compression: {
          threshold: 0.5,
          model_thresholds: { "qwen3-coder": 0.8 },
          threshold_tokens: 50_000,
        },
      });
      const answer = await askHermes({
        configPath: dir.config,
        env: ENV,
        models: ["standin-wide"],
      });
      deepStrictEqual(answer.models, {
        "qwen3-coder": fromAgent(50_000),
        "standin-wide": fromAgent(standin(65_536, 0.5)),
      });
    },
  );
  await t.step("each named model from an agent built for it", async () => {
    await dir.write({
      ...LOCAL,
      compression: {
        threshold: 0.5,
        model_thresholds: { "standin-wide": 0.9 },
      },
    });
    const answer = await askHermes({
      configPath: dir.config,
      env: ENV,
      models: ["standin-wide", "other", "qwen3-coder"],
    });
    deepStrictEqual(answer.models, {
      "qwen3-coder": fromAgent(standin(65_536, 0.5)),
      "standin-wide": fromAgent(standin(65_536, 0.9)),
      other: fromAgent(standin(65_536, 0.5)),
    });
  });
  await t.step(
    "the CLI's output reservation: HERMES_MAX_TOKENS, else model.max_tokens",
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
      strictEqual(fromEnv.maxTokens, 8192);
      // The CLI passes none for a value it cannot read; the agent then
      // reads model.max_tokens itself.
      const invalid = await askHermes({
        configPath: dir.config,
        env: { ...ENV, HERMES_MAX_TOKENS: "lots" },
      });
      strictEqual(invalid.window, standin(65_536, 0.5, 4096));
    },
  );
  await t.step("HERMES_MAX_TOKENS of Hermes' .env wins", async () => {
    const dotenv = join(dir.config, "..", ".env");
    await writeFile(dotenv, "HERMES_MAX_TOKENS=2048\n");
    try {
      const answer = await askHermes({
        configPath: dir.config,
        env: { ...ENV, HERMES_MAX_TOKENS: "8192" },
      });
      strictEqual(answer.maxTokens, 2048);
      strictEqual(answer.window, standin(65_536, 0.5, 2048));
    } finally {
      await python("import os, sys; os.remove(sys.argv[1])", dotenv);
    }
  });
  await t.step("compression disabled -> the context length", async () => {
    await dir.write({ ...LOCAL, compression: { enabled: false } });
    const answer = await askHermes({ configPath: dir.config, env: ENV });
    strictEqual(answer.window, 65_536);
    strictEqual(answer.compressionEnabled, false);
    strictEqual(answer.source, "agent");
  });
  await t.step(
    "INCONTEXT_CONTEXT_LENGTH when the config names none",
    async () => {
      await dir.write({
        model: { default: "m", base_url: "http://127.0.0.1:8787/v1" },
      });
      const answer = await askHermes({
        configPath: dir.config,
        env: ENV,
        contextLength: 131_072,
      });
      strictEqual(answer.contextLength, 131_072);
      strictEqual(answer.window, standin(131_072, 0.5));
      strictEqual(answer.source, "agent");
    },
  );
  await t.step(
    "the version from the hermes-agent distribution's metadata",
    async () => {
      const answer = await askHermes({
        configPath: dir.config,
        env: { ...ENV, PYTHONPATH: `${STANDIN}:${DIST}` },
        contextLength: 131_072,
      });
      strictEqual(answer.hermesVersion, "0.0.1+standin");
      strictEqual(answer.versionSource, "hermes-agent distribution metadata");
    },
  );
});

Deno.test("askHermes() builds the compressor where the agent cannot be built offline", async (t) => {
  await using dir = await home({
    ...LOCAL,
    compression: { threshold: 0.5, threshold_tokens: 50_000 },
  });
  await t.step("an agent that raises", async () => {
    const answer = await askHermes({
      configPath: dir.config,
      env: { ...ENV, STANDIN_AGENT_FAIL: "1" },
      models: ["standin-wide"],
    });
    // As Hermes 0.19's init_agent(): the auxiliary override and the cap.
    deepStrictEqual(answer.models, {
      "qwen3-coder": {
        window: standin(65_536, 0.5),
        contextLength: 65_536,
        source: "compressor",
        file: COMPRESSOR_FILE,
        fallback: "RuntimeError",
        wiring: "0.19",
        selfCheck: standin(65_536, 0.5),
      },
      "standin-wide": {
        window: 50_000,
        contextLength: 65_536,
        source: "compressor",
        file: COMPRESSOR_FILE,
        fallback: "RuntimeError",
        wiring: "0.19",
        selfCheck: 50_000,
      },
    });
  });
  await t.step("no base URL to build it with", async () => {
    await dir.write({ model: { default: "m", context_length: 65_536 } });
    const answer = await askHermes({ configPath: dir.config, env: ENV });
    strictEqual(answer.source, "compressor");
    strictEqual(answer.fallback, "base_url");
    strictEqual(answer.window, standin(65_536, 0.5));
  });
  await t.step(
    "an agent that tries the network before its compressor reaches nothing",
    async () => {
      await dir.write(LOCAL);
      const { answer, connections } = await dialled("STANDIN_DIAL");
      strictEqual(connections, 0);
      strictEqual(answer.source, "compressor");
      strictEqual(answer.fallback, "network");
      strictEqual(answer.window, standin(65_536, 0.5));
    },
  );
  await t.step(
    "a connection refused after the compressor was built leaves the agent's W",
    async () => {
      const { answer, connections } = await dialled("STANDIN_DIAL_AFTER");
      strictEqual(connections, 0);
      strictEqual(answer.source, "agent");
      strictEqual(answer.refused, 1);
      strictEqual(answer.window, standin(65_536, 0.5));
    },
  );

  /** Asks with the stand-in dialling a real listener; counts what reached it. */
  async function dialled(variable: string) {
    using listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    let connections = 0;
    const accepting = (async () => {
      for await (const connection of listener) {
        connections += 1;
        connection.close();
      }
    })();
    const answer = await askHermes({
      configPath: dir.config,
      env: { ...ENV, [variable]: String(listener.addr.port) },
    });
    listener.close();
    await accepting.catch(() => {});
    return { answer, connections };
  }
});

Deno.test("askHermes() leaves the Hermes home as it was", async () => {
  await using dir = await home(LOCAL);
  const folder = join(dir.config, "..");
  const before = await python(LISTING, folder);
  // The stand-in's agent writes logs under HERMES_HOME, as Hermes does.
  const answer = await askHermes({
    configPath: dir.config,
    env: ENV,
    contextLength: 131_072,
  });
  strictEqual(answer.source, "agent");
  strictEqual(await python(LISTING, folder), before);
  ok(before.includes("config.yaml"), before);
});

Deno.test("askHermes() reports where Hermes' own threshold function disagrees with its agent", async () => {
  await using dir = await home(LOCAL);
  const answer = await askHermes({
    configPath: dir.config,
    env: { ...ENV, STANDIN_SKEW: "7" },
  });
  strictEqual(answer.window, standin(65_536, 0.5) + 7);
  strictEqual(answer.selfCheck, standin(65_536, 0.5));
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
  await t.step(
    "Hermes builds neither its agent nor its compressor",
    async () => {
      const text = await failure(askHermes({
        configPath: dir.config,
        env: { ...ENV, STANDIN_FAIL: "1" },
      }));
      strictEqual(
        text,
        "INCONTEXT_HERMES_CONFIG could not be read by Hermes: building its agent and its compressor failed (ValueError)",
      );
    },
  );
  await t.step("a context engine in place of the compressor", async () => {
    await dir.write({ ...LOCAL, context: { engine: "standin-engine" } });
    const text = await failure(askHermes({ configPath: dir.config, env: ENV }));
    ok(text.startsWith("INCONTEXT_HERMES_CONFIG (context.engine) selects"));
    ok(text.includes("INCONTEXT_COMPRESSION_WINDOW_TOKENS"), text);
  });
  await t.step("an engine Hermes does not find: its compressor", async () => {
    await dir.write({ ...LOCAL, context: { engine: "lcm" } });
    const answer = await askHermes({ configPath: dir.config, env: ENV });
    strictEqual(answer.window, standin(65_536, 0.5));
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
    // Hermes reads its config once for the script and once for the agent.
    ok(calls.length >= 1);
    for (const call of calls) {
      // The request: the config path, the models and the context length only.
      deepStrictEqual(JSON.parse(call.argv.at(-1)), {
        config: dir.config,
        models: ["qwen3-coder"],
        context_length: null,
      });
      strictEqual(call.stdin, "");
    }
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
    await dir.write({ ...LOCAL, context: { engine: "standin-engine" } });
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
