import { deepStrictEqual, ok, rejects, strictEqual } from "node:assert/strict";
import { ConfigError } from "../../../src/core/config_error.ts";
import {
  type ResolveServerOptions,
  resolveServerSettings,
  type ServerSettings,
} from "../../../src/cli/setup/settings.ts";

const TOKENIZER = { INCONTEXT_TOKENIZER_URL: "http://127.0.0.1:8000/tokenize" };
const UPSTREAM = "http://127.0.0.1:8000";

async function resolved(
  args: readonly string[],
  env: Record<string, string | undefined>,
): Promise<ServerSettings> {
  const settings = await resolveServerSettings(args, { ...TOKENIZER, ...env });
  ok(settings !== "help");
  return settings;
}

async function issuesOf(
  args: readonly string[],
  env: Record<string, string | undefined>,
  options: ResolveServerOptions = {},
): Promise<string[]> {
  let issues: string[] = [];
  await rejects(resolveServerSettings(args, env, options), (error) => {
    ok(error instanceof ConfigError);
    issues = error.issues.map((issue) => `${issue.variable} ${issue.rule}`);
    return true;
  });
  return issues;
}

Deno.test("resolveServerSettings() says where each setting came from", async (t) => {
  await t.step("a flag wins over its variable and names itself", async () => {
    const settings = await resolved(
      ["--window", "50000", "--context-length", "65536", "--listen", "[::1]:9"],
      {
        INCONTEXT_UPSTREAM_URL: UPSTREAM,
        INCONTEXT_COMPRESSION_WINDOW_TOKENS: "40000",
      },
    );
    strictEqual(settings.window, 50000);
    strictEqual(settings.windowSource, "--window");
    strictEqual(settings.contextLength, 65536);
    strictEqual(settings.contextLengthSource, "--context-length");
    deepStrictEqual([settings.hostname, settings.port], ["::1", 9]);
    strictEqual(settings.upstream, UPSTREAM);
    strictEqual(
      settings.nameOf("INCONTEXT_COMPRESSION_WINDOW_TOKENS"),
      "--window (INCONTEXT_COMPRESSION_WINDOW_TOKENS)",
    );
    strictEqual(
      settings.nameOf("INCONTEXT_LISTEN"),
      "--listen (INCONTEXT_LISTEN)",
    );
    strictEqual(settings.nameOf("INCONTEXT_MODEL"), "INCONTEXT_MODEL");
  });

  await t.step(
    "a variable set under its legacy alias is named so",
    async () => {
      const settings = await resolved(["--upstream", UPSTREAM], {
        HERMES_DYNAMIC_BUDGET_COMPRESSION_WINDOW_TOKENS: "50000",
        INCONTEXT_CONTEXT_LENGTH: "65536",
      });
      strictEqual(settings.window, 50000);
      strictEqual(
        settings.windowSource,
        "HERMES_DYNAMIC_BUDGET_COMPRESSION_WINDOW_TOKENS",
      );
      strictEqual(settings.contextLengthSource, "INCONTEXT_CONTEXT_LENGTH");
      strictEqual(settings.hermes, undefined);
    },
  );

  await t.step(
    "a Hermes config gives the window and the context length",
    async () => {
      const path = await Deno.makeTempFile({ suffix: ".yaml" });
      try {
        await Deno.writeTextFile(
          path,
          "model:\n  default: qwen\n  context_length: 65536\n",
        );
        const settings = await resolved(["--hermes-config", path], {
          INCONTEXT_UPSTREAM_URL: UPSTREAM,
          INCONTEXT_HERMES_RELEASE: "2026-09",
        });
        strictEqual(settings.window, 55705);
        strictEqual(
          settings.windowSource,
          "Hermes 2026-09 arithmetic (INCONTEXT_HERMES_RELEASE) (--hermes-config)",
        );
        strictEqual(settings.contextLength, 65536);
        strictEqual(settings.contextLengthSource, "Hermes (--hermes-config)");
        deepStrictEqual(settings.hermes?.routes, [{
          model: "qwen",
          window: 55705,
        }]);
      } finally {
        await Deno.remove(path);
      }
    },
  );

  await t.step("--help is an answer, not settings", async () => {
    strictEqual(await resolveServerSettings(["--help"], {}), "help");
  });
});

Deno.test("resolveServerSettings() reports every bad setting at once, in order", async (t) => {
  await t.step("nothing set", async () => {
    deepStrictEqual(await issuesOf([], TOKENIZER), [
      "INCONTEXT_UPSTREAM_URL is required (or --upstream)",
      "INCONTEXT_COMPRESSION_WINDOW_TOKENS is unset and so is INCONTEXT_HERMES_CONFIG: set either (or --window, --hermes-config) to give the compression window",
      "INCONTEXT_CONTEXT_LENGTH is required (or --context-length, or model.context_length in the Hermes config)",
    ]);
  });

  await t.step(
    "an unknown backend, named by the flag that set it",
    async () => {
      const issues = await issuesOf(
        [
          "--backend",
          "vlm",
          "--window",
          "50000",
          "--context-length",
          "65536",
        ],
        { ...TOKENIZER, INCONTEXT_UPSTREAM_URL: UPSTREAM },
        { knownBackends: ["vllm", "local"] },
      );
      deepStrictEqual(issues, [
        "--backend (INCONTEXT_BACKEND) names no known backend (did you mean 'vllm'?); use one of: vllm, local",
      ]);
    },
  );

  await t.step("an unknown backend under its legacy alias", async () => {
    const issues = await issuesOf(
      ["--window", "50000", "--context-length", "65536"],
      {
        ...TOKENIZER,
        INCONTEXT_UPSTREAM_URL: UPSTREAM,
        HERMES_DYNAMIC_BUDGET_BACKEND: "nope",
      },
      { knownBackends: ["vllm", "local"] },
    );
    deepStrictEqual(issues, [
      "HERMES_DYNAMIC_BUDGET_BACKEND names no known backend; use one of: vllm, local",
    ]);
  });

  await t.step("a Hermes config that cannot be read", async () => {
    const issues = await issuesOf(
      ["--hermes-config", "/nonexistent/config.yaml"],
      { ...TOKENIZER, INCONTEXT_UPSTREAM_URL: UPSTREAM },
    );
    deepStrictEqual(issues, [
      "--hermes-config (INCONTEXT_HERMES_CONFIG) must name a readable file (ENOENT)",
    ]);
  });
});
