/**
 * The engine's representative cases for the Node proof: the four model
 * families the exactness tests cover (their real `tokenizer.json` and chat
 * template), and seeded conversations that grow turn by turn, with
 * reasoning, tool calls, tool results and the texts that stress a
 * tokenizer (scripts, emoji, whitespace runs, added-token look-alikes).
 * Each case is rendered, counted and tokenized here, under Deno, where the
 * template and tokenizer suites hold the engine to jinja2 and the Rust
 * tokenizers; `engine.node.mjs` then does the same under Node with the
 * dependencies npm installed, and every result must match.
 *
 * @module
 */
import {
  createEngine,
  type EngineCall,
  RequestRejectedError,
} from "@incontext/engine";
import { buildTokenizePayload, vllmRules } from "@incontext/engine/vllm";
import { MODEL_FILES } from "../_kit/model_files.ts";
import { mulberry32 } from "../_kit/prng.ts";
import { type Message, nextTurn, TOOLS } from "../_kit/random_conversations.ts";

/**
 * One case: a folder, a payload, and what the engine made of it under
 * Deno: its render, count and ids, or the name of the error the template
 * raised (Gemma's refuses a tool turn).
 */
export type EngineCase =
  & { readonly family: string; readonly payload: Record<string, unknown> }
  & (
    | {
      readonly render: string;
      readonly count: number;
      readonly ids: readonly number[];
    }
    | { readonly rejected: string }
  );

/** Turns per conversation; the payload of each prefix is a case. */
const TURNS = 4;
/** Conversations per family: one with tools, one without. */
const SEEDS = [7, 8];

/** Copies each family's files into `dir/<family>/`, a model folder as vLLM serves it. */
export async function writeFolders(dir: string): Promise<void> {
  for (const model of MODEL_FILES) {
    await Deno.mkdir(`${dir}/${model.family}`, { recursive: true });
    await Deno.copyFile(
      model.tokenizerPath,
      `${dir}/${model.family}/tokenizer.json`,
    );
    await Deno.copyFile(
      model.configPath,
      `${dir}/${model.family}/tokenizer_config.json`,
    );
    // The model's config.json, where the kit's folder has one.
    const modelConfig = model.tokenizerPath.replace(
      /tokenizer\.json$/,
      "config.json",
    );
    try {
      await Deno.copyFile(modelConfig, `${dir}/${model.family}/config.json`);
    } catch (error) {
      if (!(error instanceof Deno.errors.NotFound)) throw error;
    }
  }
}

/** The payloads of the growing conversations. */
function payloads(): Record<string, unknown>[] {
  const found: Record<string, unknown>[] = [];
  for (const seed of SEEDS) {
    const random = mulberry32(seed);
    const tools = seed % 2 === 1;
    const messages: Message[] = [{ role: "system", content: "Be brief." }];
    for (let turn = 0; turn < TURNS; turn++) {
      messages.push(...nextTurn(random, tools, turn));
      const request = {
        messages: [...messages, { role: "user", content: "And then?" }],
        ...(tools ? { tools: TOOLS } : {}),
      };
      found.push(buildTokenizePayload(request, vllmRules()));
    }
  }
  return found;
}

/**
 * Every case, run through the engine under Deno over the folders
 * {@linkcode writeFolders} wrote in `dir`.
 */
export async function engineCases(dir: string): Promise<EngineCase[]> {
  const engine = createEngine({
    store() {},
    epoch: () => 0,
    pieces: new Map(),
  });
  const cases: EngineCase[] = [];
  for (const { family } of MODEL_FILES) {
    const spec = { dir: `${dir}/${family}` };
    for (const payload of payloads()) {
      const call = (op: "render" | "count"): EngineCall => ({
        op,
        spec,
        kind: "chat",
        payload,
      });
      try {
        cases.push({
          family,
          payload,
          render: await engine.run(call("render")) as string,
          count: await engine.run(call("count")) as number,
          ids: await engine.run({
            op: "tokenize",
            spec,
            body: payload,
          }) as number[],
        });
      } catch (error) {
        if (!(error instanceof RequestRejectedError)) throw error;
        cases.push({ family, payload, rejected: error.name });
      }
    }
  }
  return cases;
}
