import { strictEqual } from "node:assert/strict";
import { nearestName } from "../../src/_internal/nearest_name.ts";

const BACKENDS = [
  "vllm",
  "local",
  "anchored",
  "llamacpp",
  "tgi",
  "sglang",
  "anthropic",
  "gemini",
  "openai",
];

Deno.test("nearestName() suggests the known name a typo is one or two edits from", () => {
  strictEqual(nearestName("vlm", BACKENDS), "vllm");
  strictEqual(nearestName("VLLM", BACKENDS), "vllm");
  strictEqual(nearestName("lcoal", BACKENDS), "local");
  strictEqual(nearestName("llama.cpp", BACKENDS), "llamacpp");
  strictEqual(nearestName("antropic", BACKENDS), "anthropic");
  strictEqual(nearestName("serv", ["serve", "check", "count"]), "serve");
  strictEqual(nearestName("chekc", ["serve", "check", "count"]), "check");
});

Deno.test("nearestName() suggests nothing for a name unlike every known one", () => {
  strictEqual(nearestName("ollama", BACKENDS), undefined);
  strictEqual(nearestName("x", BACKENDS), undefined);
  strictEqual(nearestName("", BACKENDS), undefined);
  strictEqual(nearestName("vllm", []), undefined);
});
