/**
 * The process-wide registry with the bundled backends, each registered
 * under the name and requirements its folder declares.
 *
 * @module
 */
import {
  type BackendRegistry,
  createBackendRegistry,
} from "../core/registry.ts";
import {
  type BundledBackend,
  requiredVariables,
} from "./_shared/from_config.ts";
import { VLLM } from "./vllm/vllm_backend.ts";
import { LOCAL } from "./local/local_backend.ts";
import { ANCHORED } from "./anchored/anchored_backend.ts";
import { LLAMACPP } from "./llamacpp/llamacpp_backend.ts";
import { TGI } from "./tgi/tgi_backend.ts";
import { SGLANG } from "./sglang/sglang_backend.ts";
import { ANTHROPIC } from "./anthropic/anthropic_backend.ts";
import { GEMINI } from "./gemini/gemini_backend.ts";
import { OPENAI } from "./openai/openai_backend.ts";

/** The bundled backends, in the order they are registered. */
const BUNDLED: readonly BundledBackend[] = [
  VLLM,
  LOCAL,
  ANCHORED,
  LLAMACPP,
  TGI,
  SGLANG,
  ANTHROPIC,
  GEMINI,
  OPENAI,
];

/**
 * The process-wide backend registry. The bundled `vllm` backend is
 * registered here; third-party modules register theirs with
 * `backends.plugin(name, factory)`.
 *
 * @example Selecting the bundled backend
 * ```ts
 * import { backends, loadConfig } from "@incontext/incontext";
 * import { ok, strictEqual } from "node:assert/strict";
 *
 * ok(backends.names().includes("vllm"));
 * const config = loadConfig({ INCONTEXT_TOKENIZER_URL: "http://127.0.0.1:8000/tokenize" });
 * strictEqual(backends.one("vllm", config).source, "vllm-tokenize");
 * ```
 */
export const backends: BackendRegistry = createBackendRegistry();
for (const backend of BUNDLED) {
  backends.plugin(backend.name, backend.factory, {
    requires: requiredVariables(backend),
  });
}
