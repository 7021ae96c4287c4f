/**
 * The counting engine: a model folder's prompt counted exactly as vLLM
 * counts it, in process. It loads the folder's `tokenizer.json` and chat
 * template, preprocesses a `/tokenize` payload by the rules of the vLLM
 * release mirrored, renders it (the chat template with jinja2's semantics,
 * or vLLM's DeepSeek V3.2 and V4 encoders), and tokenizes the render,
 * counting only what a growing conversation added. vLLM's request rules
 * alone are `@incontext/engine/vllm`.
 *
 * A host runs the engine through {@linkcode createEngine} (one call per
 * operation, answered with data that survives a structured clone, as a
 * worker needs) or holds a {@linkcode LocalModels} itself. Every error is an
 * {@linkcode EngineError}, whose message holds no prompt text.
 *
 * @example Counting a chat request with a model folder
 * ```ts ignore
 * import { LocalModels } from "@incontext/engine";
 * import { buildTokenizePayload } from "@incontext/engine/vllm";
 *
 * const models = new LocalModels({ pieces: new Map(), store() {}, epoch: () => 0 });
 * const request = { messages: [{ role: "user", content: "Hi" }] };
 * const count = await models.count({
 *   spec: { dir: "./Qwen3-8B" },
 *   kind: "chat",
 *   payload: buildTokenizePayload(request),
 * });
 * console.log(count);
 * ```
 *
 * @module
 */
export {
  EngineError,
  RequestRejectedError,
  UnsupportedConstructError,
} from "./src/common/errors.ts";
export type {
  CapField,
  JsonObject,
  RequestKind,
} from "./src/common/request.ts";
export {
  type ChatFolderOptions,
  checkFolderOptions,
  type ContentFormatOption,
  filesIdentity,
  type FilesSha256,
  folderSpec,
} from "./src/model/chat_render.ts";
export { PlainShapes } from "./src/common/plain_copy.ts";
export { commonPrefixLength } from "./src/common/common_prefix.ts";
export type { ContentFormat } from "./src/jinja/content_format.ts";
export type { PieceStore } from "./src/model/prefix.ts";
export {
  type HostStore,
  type LocalCountJob,
  LocalModels,
  type ModelSpec,
} from "./src/model/models.ts";
export {
  createEngine,
  type Engine,
  type EngineCall,
} from "./src/model/operations.ts";
export type { DecodeForm } from "./src/model/tokenize.ts";
