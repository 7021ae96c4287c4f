/**
 * `incontext check`: loads the configuration as `serve` would, probes the
 * tokenizer (each backend of a chain) and the upstream once, and says in
 * plain words what it found, and why it counts with the backends it does.
 * Exit code 0 only when budgeting would be exact (and the upstream, when
 * given, answers with the configured context length); 1 when it would
 * not; 2 for a bad setting.
 *
 * @module
 */
import { configured } from "../config_failure.ts";
import { configureConsoleLog, logSettings } from "../console_log.ts";
import { prepare, type Prepared } from "../setup/prepare.ts";
import {
  probeUpstream,
  type TokenizerProbe,
  type UpstreamProbe,
} from "../setup/probes.ts";
import {
  backendLine,
  backendWhy,
  contextProbe,
  probeLinks,
} from "../setup/backend_chain.ts";
import { HELP } from "../setup/help.ts";
import type { ServerSettings } from "../setup/settings.ts";
import type { Backend } from "../../core/backend.ts";
import { type ChatUsage, checkChatUsage } from "./chat_usage.ts";

/**
 * Runs the check and prints its report on standard output.
 *
 * @param args The command's arguments, after `check`: the flags of `serve`.
 * @param env The environment.
 * @returns 0 when budgeting would be exact, 1 when not, 2 for a bad setting.
 */
export async function checkCommand(
  args: readonly string[],
  env: Record<string, string | undefined>,
): Promise<number> {
  await configureConsoleLog(logSettings(env));
  const prepared = await configured(
    "incontext check",
    () => prepare(args, env, { requireUpstream: false }),
  );
  if ("exitCode" in prepared) return prepared.exitCode;
  if (prepared.value === "help") {
    console.log(
      HELP.replace("incontext serve [flags]", "incontext check [flags]"),
    );
    return 0;
  }
  const ready = prepared.value;
  try {
    return await report(ready);
  } finally {
    await ready[Symbol.asyncDispose]();
  }
}

/** Probes, prints the findings, and returns the exit code. */
async function report(ready: Prepared): Promise<number> {
  const { settings, backend } = ready;
  const [probes, upstream] = await Promise.all([
    probeLinks(settings, backend),
    settings.upstream === undefined
      ? undefined
      : probeUpstream(settings.upstream, {
        contextLength: settings.contextLength,
        contextLengthSource: settings.contextLengthSource,
        model: settings.config.model,
        modelSource: settings.nameOf("INCONTEXT_BUDGET_MODEL"),
      }),
  ]);
  const [first, ...later] = probes;
  const context = contextProbe(probes);
  const model = settings.config.model ?? servedModel(upstream);
  const estimated = backend.estimateReason(model);
  const chat = await chatUsage(ready, model);
  const exact = probes.every((p) => p.probe.status === "exact") &&
    estimated === undefined && chat?.agrees !== false &&
    (upstream === undefined ||
      (upstream.reachable && upstream.problem === undefined));
  const lines = [
    `backend:        ${backendLine(settings, backend)}`,
    `why:            ${backendWhy(settings)}`,
    `window:         ${settings.window} tokens, from ${settings.windowSource}`,
    `context length: ${contextLine(settings, context.backend, context.probe)}`,
    `tokenizer:      ${tokenizerLine(first!.probe)}`,
    ...later.map((p) =>
      `${`then ${p.name}:`.padEnd(16)}${tokenizerLine(p.probe)}`
    ),
    `upstream:       ${upstreamLine(upstream)}`,
    ...(estimated === undefined ? [] : [
      `chat prompt:    ${
        model === undefined ? "" : `${model}: `
      }${estimated}; counts come from usage anchors, estimated with the fallback margin until a conversation has one`,
    ]),
    ...(chat === undefined ? [] : [`chat usage:     ${chat.line}`]),
    exact
      ? "Budgeting is exact: every request gets min(its cap, W - its prompt tokens)."
      : "Budgeting would not be exact: fix what is said above.",
  ];
  console.log(lines.join("\n"));
  return exact ? 0 : 1;
}

/** The chat check, when `INCONTEXT_CHECK_CHAT` asks for it. */
async function chatUsage(
  { settings, backend }: Prepared,
  model: string | undefined,
): Promise<ChatUsage | undefined> {
  if (!settings.config.checkChat) return undefined;
  if (settings.upstream === undefined) {
    return {
      agrees: false,
      line: "not compared: give the upstream (--upstream)",
    };
  }
  return await checkChatUsage({
    backend,
    upstream: settings.upstream,
    model,
    contextLength: settings.contextLength,
  });
}

/** The model the upstream serves, when it lists one. */
function servedModel(upstream: UpstreamProbe | undefined): string | undefined {
  return upstream?.reachable ? upstream.served?.model : undefined;
}

function contextLine(
  settings: ServerSettings,
  backend: Backend,
  tokenizer: TokenizerProbe,
): string {
  const configured =
    `${settings.contextLength} tokens, from ${settings.contextLengthSource}`;
  if (tokenizer.status === "mismatch") {
    const { servedBy, served } = tokenizer.mismatch;
    return `${configured}; but ${servedBy} is ${served}: set them equal`;
  }
  if (backend.servedContext === undefined) {
    return `${configured}; the backend does not report the server's own`;
  }
  return tokenizer.status === "failed"
    ? `${configured}; ${backend.servedContext} unknown (no answer)`
    : `${configured}; ${backend.servedContext} agrees`;
}

function tokenizerLine(tokenizer: TokenizerProbe): string {
  switch (tokenizer.status) {
    case "exact":
      return `reachable: counted a probe request exactly (${tokenizer.tokens} tokens)`;
    case "estimated":
      return `answered with an estimate (${tokenizer.tokens} tokens): counts are exact only once a response's usage anchors a conversation`;
    case "mismatch":
      return "reachable, but its context length differs (see above)";
    case "failed":
      return `${tokenizer.problem}: requests would get the rough estimate`;
  }
}

function upstreamLine(upstream: UpstreamProbe | undefined): string {
  if (upstream === undefined) return "not given (--upstream): not checked";
  if (!upstream.reachable) {
    return `${upstream.problem}: requests would get 502`;
  }
  if (upstream.problem !== undefined) return upstream.problem;
  const { served, note } = upstream;
  const agrees = served === undefined
    ? ""
    : `; max_model_len ${served.maxModelLen} (${served.model}) agrees`;
  return `reachable: GET ${upstream.url} answered ${upstream.status}${agrees}${
    note === undefined ? "" : `; ${note}`
  }`;
}
