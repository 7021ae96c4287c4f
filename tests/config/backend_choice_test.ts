import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import { dirname } from "node:path";
import {
  type Config,
  ConfigError,
  type ConfigIssue,
  loadConfig,
} from "../../src/config/mod.ts";
import { serveFakeUpstream } from "../../src/testing/mod.ts";
import { MODEL_FILES } from "../_kit/model_files.ts";
import { hasStackTrace, runCli } from "../_kit/cli_process.ts";

type Env = Record<string, string>;

const DIR = { INCONTEXT_TOKENIZER_DIR: "/models/qwen3" };
const URL = { INCONTEXT_TOKENIZER_URL: "http://127.0.0.1:8000/tokenize" };

/** The issues `loadConfig(env)` throws. */
function issuesOf(env: Env): ConfigIssue[] {
  try {
    loadConfig(env);
  } catch (error) {
    ok(error instanceof ConfigError, String(error));
    return [...error.issues];
  }
  throw new Error("expected loadConfig() to throw");
}

/** The backends a configuration counts with, first first. */
function chainOf(config: Config): string[] {
  return [config.backend, ...(config.backendFallbacks ?? [])];
}

Deno.test("loadConfig() counts locally with vllm behind when the folder and the URL are both given", async (t) => {
  await t.step("both: the chain local,vllm", () => {
    deepStrictEqual(chainOf(loadConfig({ ...DIR, ...URL })), [
      "local",
      "vllm",
    ]);
  });
  await t.step("only the folder: local", () => {
    const config = loadConfig(DIR);
    deepStrictEqual(chainOf(config), ["local"]);
    ok(!("backendFallbacks" in config));
  });
  await t.step("only the URL: vllm", () => {
    deepStrictEqual(chainOf(loadConfig(URL)), ["vllm"]);
  });
  await t.step("neither: vllm, whose URL is missing", () => {
    deepStrictEqual(issuesOf({}), [{
      variable: "INCONTEXT_TOKENIZER_URL",
      rule: "is required by the 'vllm' backend",
    }]);
  });
  await t.step("a named backend wins over the choice", () => {
    deepStrictEqual(
      chainOf(loadConfig({ ...DIR, ...URL, INCONTEXT_BACKEND: "vllm" })),
      ["vllm"],
    );
  });
  await t.step(
    "an invalid URL beside the folder is reported as invalid",
    () => {
      deepStrictEqual(
        issuesOf({ ...DIR, INCONTEXT_TOKENIZER_URL: "ftp://h/t" }).map((i) =>
          i.variable
        ),
        ["INCONTEXT_TOKENIZER_URL"],
      );
    },
  );
});

Deno.test("loadConfig() reads INCONTEXT_BACKEND as a chain", async (t) => {
  await t.step("names split at commas, spaces trimmed", () => {
    deepStrictEqual(
      chainOf(
        loadConfig({ ...DIR, ...URL, INCONTEXT_BACKEND: " local , vllm" }),
      ),
      ["local", "vllm"],
    );
    deepStrictEqual(
      chainOf(
        loadConfig({ ...URL, HERMES_DYNAMIC_BUDGET_BACKEND: "vllm,llamacpp" }),
      ),
      ["vllm", "llamacpp"],
    );
  });
  await t.step("each backend's requirements are checked", () => {
    deepStrictEqual(issuesOf({ ...DIR, INCONTEXT_BACKEND: "local,vllm" }), [{
      variable: "INCONTEXT_TOKENIZER_URL",
      rule: "is required by the 'vllm' backend",
    }]);
  });
  await t.step("a bad chain: one line per rule, no name echoed", () => {
    deepStrictEqual(
      issuesOf({ ...DIR, ...URL, INCONTEXT_BACKEND: "local,,vllm,local" }),
      [
        {
          variable: "INCONTEXT_BACKEND",
          rule: "item 2 must not be empty",
        },
        {
          variable: "INCONTEXT_BACKEND",
          rule: "item 4 must not repeat item 1",
        },
      ],
    );
    deepStrictEqual(issuesOf({ ...URL, INCONTEXT_BACKEND: "vllm,anchored" }), [{
      variable: "INCONTEXT_BACKEND",
      rule:
        "must not chain 'anchored': its counts come from the usage a chain checks counts against",
    }]);
  });
});

Deno.test("loadConfig() reads INCONTEXT_BACKEND_FALLBACK_TURNS", async (t) => {
  await t.step("unset: absent, a model stays until restart", () => {
    ok(!("backendFallbackTurns" in loadConfig({ ...DIR, ...URL })));
  });
  await t.step("a positive integer, with a chain", () => {
    strictEqual(
      loadConfig({ ...DIR, ...URL, INCONTEXT_BACKEND_FALLBACK_TURNS: "20" })
        .backendFallbackTurns,
      20,
    );
  });
  await t.step("not a positive integer: one line", () => {
    deepStrictEqual(
      issuesOf({ ...DIR, ...URL, INCONTEXT_BACKEND_FALLBACK_TURNS: "0" }),
      [{
        variable: "INCONTEXT_BACKEND_FALLBACK_TURNS",
        rule: "must be a positive integer",
      }],
    );
  });
  await t.step("without a chain: one line saying why", () => {
    deepStrictEqual(
      issuesOf({ ...URL, INCONTEXT_BACKEND_FALLBACK_TURNS: "5" }),
      [{
        variable: "INCONTEXT_BACKEND_FALLBACK_TURNS",
        rule:
          "is set but INCONTEXT_BACKEND names one backend: the turns are counted on the next backend of a chain such as local,vllm",
      }],
    );
  });
});

const QWEN3 = dirname(
  MODEL_FILES.find((model) => model.family === "qwen3")!.tokenizerPath,
);
const WINDOW = {
  INCONTEXT_CONTEXT_LENGTH: "65536",
  INCONTEXT_COMPRESSION_WINDOW_TOKENS: "55705",
};

/** The `label:` line of a check report, without its label. */
function line(stdout: string, label: string): string | undefined {
  return stdout.split("\n").find((l) => l.startsWith(`${label}:`))?.slice(16);
}

Deno.test("incontext check says which backend chain it uses, and why", async (t) => {
  await using upstream = await serveFakeUpstream({ maxModelLen: 65536 });
  const url = { INCONTEXT_TOKENIZER_URL: upstream.tokenizeUrl };
  const dir = { INCONTEXT_TOKENIZER_DIR: QWEN3 };
  await t.step("the folder and the URL: local, then vllm", async () => {
    const output = await runCli(["check"], {
      env: { ...WINDOW, ...url, ...dir },
    });
    strictEqual(output.code, 0, output.stdout + output.stderr);
    strictEqual(
      line(output.stdout, "backend"),
      `local (counts as local-tokenizer), then vllm (counts as vllm-tokenize) at ${upstream.tokenizeUrl}; a model whose count a response's usage contradicts moves to the next backend until restart`,
    );
    strictEqual(
      line(output.stdout, "why"),
      "INCONTEXT_BACKEND is unset and both INCONTEXT_TOKENIZER_DIR and INCONTEXT_TOKENIZER_URL are set: the model folder counts in process, vLLM's /tokenize behind it",
    );
    ok(
      /^then vllm: +reachable: counted a probe request exactly \(\d+ tokens\)$/m
        .test(output.stdout),
      output.stdout,
    );
    ok(
      output.stdout.includes(
        "context length: 65536 tokens, from INCONTEXT_CONTEXT_LENGTH; vLLM max_model_len agrees",
      ),
      output.stdout,
    );
  });
  await t.step("only the folder: local", async () => {
    const output = await runCli(["check"], { env: { ...WINDOW, ...dir } });
    strictEqual(output.code, 0, output.stdout + output.stderr);
    strictEqual(
      line(output.stdout, "backend"),
      "local (counts as local-tokenizer)",
    );
    strictEqual(
      line(output.stdout, "why"),
      "INCONTEXT_BACKEND is unset and only INCONTEXT_TOKENIZER_DIR is set: the model folder counts in process",
    );
  });
  await t.step("a named chain with turns, from the flag", async () => {
    const output = await runCli(["check", "--backend", "local,vllm"], {
      env: {
        ...WINDOW,
        ...url,
        ...dir,
        INCONTEXT_BACKEND_FALLBACK_TURNS: "50",
      },
    });
    strictEqual(output.code, 0, output.stdout + output.stderr);
    ok(
      line(output.stdout, "backend")?.endsWith(
        "moves to the next backend for 50 verified counts, then local again",
      ),
      output.stdout,
    );
    strictEqual(line(output.stdout, "why"), "--backend names it");
  });
  await t.step("a later backend that cannot count: exit 1", async () => {
    const output = await runCli(["check"], {
      env: {
        ...WINDOW,
        ...dir,
        INCONTEXT_TOKENIZER_URL: `${upstream.url}/v1/tokenize`,
      },
    });
    strictEqual(output.code, 1, output.stdout + output.stderr);
    ok(/^then vllm: +.*answered HTTP 404/m.test(output.stdout), output.stdout);
  });
  await t.step("an unknown name in a chain: exit 2, one line", async () => {
    const output = await runCli(["check"], {
      env: { ...WINDOW, ...url, INCONTEXT_BACKEND: "vllm,lcoal" },
    });
    strictEqual(output.code, 2, output.stderr);
    ok(!hasStackTrace(output.stderr), output.stderr);
    const issues = output.stderr.split("\n").filter((l) => l.startsWith("  "));
    deepStrictEqual(issues, [
      "  INCONTEXT_BACKEND names no known backend (did you mean 'local'?); use one of: vllm, local, anchored, llamacpp, tgi, sglang, anthropic, gemini, openai",
    ]);
  });
});
