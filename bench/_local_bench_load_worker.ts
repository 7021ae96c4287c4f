/**
 * A Worker that loads one model family (read the files, build the
 * tokenizer, compile the template) in its own isolate, and posts the time
 * and its heap before and after: the memory a counting Worker holds.
 *
 * @module
 */
import { dirname } from "node:path";
import { compileChatTemplate } from "../packages/engine/src/jinja/chat_template.ts";
import {
  loadTokenizer,
  readModelFolder,
} from "../packages/engine/src/tokenizer/tokenizer.ts";

/** What the Worker posts back. */
export interface LoadReport {
  /** Milliseconds to load. */
  readonly ms: number;
  /** `heapUsed` before and after, in bytes. */
  readonly heapBefore: number;
  /** `heapUsed` after the load and a count, in bytes. */
  readonly heapAfter: number;
  /** Whether `gc()` was available. */
  readonly gc: boolean;
}

const gc = (globalThis as { gc?: () => void }).gc;

async function heapUsed(): Promise<number> {
  for (let i = 0; i < 3; i++) {
    await new Promise((resolve) => setTimeout(resolve, 0));
    gc?.();
  }
  return Deno.memoryUsage().heapUsed;
}

async function load(tokenizerPath: string) {
  const folder = await readModelFolder(dirname(tokenizerPath));
  const tokenizer = loadTokenizer({
    tokenizerJson: folder.tokenizerJson,
    ...(folder.tokenizerConfig === undefined
      ? {}
      : { tokenizerConfig: folder.tokenizerConfig }),
  });
  const config = JSON.parse(folder.tokenizerConfig ?? "{}");
  const source = folder.chatTemplate ?? config.chat_template;
  const template = compileChatTemplate(
    typeof source === "string" ? source : source[0].template,
  );
  return { tokenizer, template };
}

interface WorkerScope {
  postMessage(message: LoadReport): void;
  onmessage: ((event: MessageEvent<string>) => void) | null;
}

const scope = globalThis as unknown as WorkerScope;

scope.onmessage = async (event) => {
  const heapBefore = await heapUsed();
  const start = performance.now();
  const loaded = await load(event.data);
  const ms = performance.now() - start;
  loaded.tokenizer.count("warm up the lazy parts");
  const heapAfter = await heapUsed();
  loaded.tokenizer.count("keep it alive through the measure");
  const report: LoadReport = {
    ms,
    heapBefore,
    heapAfter,
    gc: gc !== undefined,
  };
  scope.postMessage(report);
};
