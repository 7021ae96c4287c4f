/**
 * vLLM's own OpenAI API server for the benchmarks: `vllm serve` from a Python
 * environment the user built (`_vllm_api_server/README.md` tells how), with
 * the engine core replaced by `_vllm_api_server/serve.py`, so that
 * `/tokenize` is vLLM's own code over HTTP (uvicorn, FastAPI, the renderer,
 * the chat template, the Rust tokenizer) and no model is loaded.
 *
 * `AGENT_TURN_VLLM_PYTHON` names the environment's `python`;
 * `AGENT_TURN_VLLM_SRC` the vLLM source tree it runs, put first on
 * `PYTHONPATH`. The model folder holds the Qwen3 tokenizer files the project's
 * tokenize server loads, linked, and the Qwen3-8B architecture as
 * `config.json`, which vLLM reads before it builds a renderer.
 *
 * @module
 */
import { join } from "node:path";
import { CONTEXT_LENGTH, freePort, QWEN3_DIR } from "./_processes.ts";

/** Where vLLM's API server comes from. */
export interface VllmEnvironment {
  /** The environment's Python interpreter. */
  readonly python: string;
  /** The vLLM source tree, put first on `PYTHONPATH`. */
  readonly src: string;
}

/** A running vLLM API server. */
export interface VllmServer extends AsyncDisposable {
  /** Its root, `http://127.0.0.1:<port>`. */
  readonly url: string;
  /** The versions of vLLM, torch, transformers and tokenizers it runs. */
  readonly versions: string;
}

const LAUNCHER_DIR = new URL("./_vllm_api_server/", import.meta.url).pathname;

/** The model name the benchmarks send; the server is started under it. */
export const SERVED_MODEL = "Qwen/Qwen3-8B";

/**
 * The environment from `AGENT_TURN_VLLM_PYTHON` and `AGENT_TURN_VLLM_SRC`,
 * or `undefined` when either is unset.
 */
export function vllmEnvironment(): VllmEnvironment | undefined {
  const python = Deno.env.get("AGENT_TURN_VLLM_PYTHON");
  const src = Deno.env.get("AGENT_TURN_VLLM_SRC");
  if (python === undefined || src === undefined) return undefined;
  return { python, src };
}

/** Qwen3-8B's `config.json`, with the context length every benchmark server is given. */
const QWEN3_8B_CONFIG = {
  architectures: ["Qwen3ForCausalLM"],
  attention_bias: false,
  attention_dropout: 0,
  bos_token_id: 151643,
  eos_token_id: 151645,
  head_dim: 128,
  hidden_act: "silu",
  hidden_size: 4096,
  initializer_range: 0.02,
  intermediate_size: 12288,
  max_position_embeddings: CONTEXT_LENGTH,
  max_window_layers: 36,
  model_type: "qwen3",
  num_attention_heads: 32,
  num_hidden_layers: 36,
  num_key_value_heads: 8,
  rms_norm_eps: 1e-6,
  rope_scaling: null,
  rope_theta: 1000000,
  sliding_window: null,
  tie_word_embeddings: false,
  torch_dtype: "bfloat16",
  use_cache: true,
  use_sliding_window: false,
  vocab_size: 151936,
};

async function modelFolder(): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "incontext-vllm-model-" });
  for (const name of ["tokenizer.json", "tokenizer_config.json"]) {
    await Deno.symlink(join(QWEN3_DIR, name), join(dir, name));
  }
  await Deno.writeTextFile(
    join(dir, "config.json"),
    JSON.stringify(QWEN3_8B_CONFIG, null, 2),
  );
  return dir;
}

function environmentOf(env: VllmEnvironment): Record<string, string> {
  const inherited = Deno.env.get("PYTHONPATH");
  return {
    PYTHONPATH: [LAUNCHER_DIR, env.src, ...(inherited ? [inherited] : [])]
      .join(":"),
    // No __pycache__ beside the launcher, inside the repository.
    PYTHONDONTWRITEBYTECODE: "1",
  };
}

async function versionsOf(env: VllmEnvironment): Promise<string> {
  const { stdout, success } = await new Deno.Command(env.python, {
    args: [
      "-c",
      "import importlib.metadata as m; print(', '.join(f'{p} {m.version(p)}' for p in ('vllm', 'torch', 'transformers', 'tokenizers')))",
    ],
    env: environmentOf(env),
    stdout: "piped",
    stderr: "null",
  }).output();
  if (!success) throw new Error(`${env.python} cannot read vLLM's version`);
  return new TextDecoder().decode(stdout).trim();
}

/**
 * Starts vLLM's API server on a free port and waits until `/health` answers.
 *
 * @param env The Python environment and source tree.
 * @returns The server; disposing stops it and removes its model folder.
 */
export async function startVllmServer(
  env: VllmEnvironment,
): Promise<VllmServer> {
  const versions = await versionsOf(env);
  const dir = await modelFolder();
  const port = freePort();
  const child = new Deno.Command(env.python, {
    args: [
      join(LAUNCHER_DIR, "serve.py"),
      dir,
      "--served-model-name",
      SERVED_MODEL,
      "--host",
      "127.0.0.1",
      "--port",
      String(port),
      "--max-model-len",
      String(CONTEXT_LENGTH),
    ],
    env: environmentOf(env),
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).spawn();
  // Kept for a failed start; drained so the child never blocks on the pipe.
  const log: string[] = [];
  void (async () => {
    for await (
      const chunk of child.stderr.pipeThrough(new TextDecoderStream())
    ) {
      log.push(chunk);
      if (log.length > 200) log.shift();
    }
  })();
  const stop = async () => {
    try {
      child.kill("SIGTERM");
    } catch {
      // Already gone.
    }
    await child.status;
    await Deno.remove(dir, { recursive: true });
  };
  const url = `http://127.0.0.1:${port}`;
  const exited = child.status.then(() => "exited" as const);
  for (;;) {
    const state = await Promise.race([
      exited,
      fetch(`${url}/health`).then(
        async (response) => {
          await response.body?.cancel();
          return response.ok ? "up" as const : "starting" as const;
        },
        () => "starting" as const,
      ),
    ]);
    if (state === "up") break;
    if (state === "exited") {
      await stop();
      throw new Error(
        `vLLM's API server exited:\n${log.join("").slice(-4000)}`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  return { url, versions, [Symbol.asyncDispose]: stop };
}
