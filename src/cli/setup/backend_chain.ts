/**
 * The backends the command line counts with: the names the configuration
 * gives, each checked against the registry and built, one backend or a
 * `BackendChain` of them, and the words `incontext check` says them in.
 * Apart from `prepare.ts` so that what a chain changes stays in one place.
 *
 * @module
 */
import { backends } from "../../backends/registry.ts";
import {
  backendNames,
  type BackendReason,
  chooseBackends,
  splitChain,
} from "../../config/backend_choice.ts";
import type { Backend } from "../../core/backend.ts";
import { BackendChain } from "../../core/backend_chain.ts";
import type { Config } from "../../config/settings.ts";
import { ConfigError, type ConfigIssue } from "../../core/config_error.ts";
import { UnknownBackendError } from "../../backends/backend_registry.ts";
import { publicUrl } from "./endpoint_problem.ts";
import { probeTokenizer, type TokenizerProbe } from "./probes.ts";
import { suggestion } from "../suggestion.ts";

/** What of the server's settings the backends are built and described from. */
export interface ChainSettings {
  readonly config: Config;
  /** The flag or variable that named the backends, if one did. */
  readonly backendSource?: string;
  /** How to name a variable in an error (`--flag (VARIABLE)` when a flag set it). */
  readonly nameOf: (variable: string) => string;
}

/**
 * One issue per name outside `known`: of the loaded configuration, or of
 * the variable's own text when the configuration did not load.
 */
export function unknownBackends(
  { config, text, variable, known }: {
    readonly config: Config | undefined;
    /** `INCONTEXT_BACKEND`'s text (or its alias'), when set. */
    readonly text: string | undefined;
    /** The variable the names came from. */
    readonly variable: string;
    readonly known: readonly string[];
  },
): ConfigIssue[] {
  const names = config === undefined
    ? splitChain(text ?? "").filter((name) => name !== "")
    : backendNames(config);
  return names.filter((name) => !known.includes(name)).map((name) => ({
    variable,
    rule: `names no known backend${suggestion(name, known)}; use one of: ${
      known.join(", ")
    }`,
  }));
}

/**
 * The backend the configuration names: a registered one, or a chain of
 * them with the configured turns.
 *
 * @throws {ConfigError} Naming the variable when a name is not registered.
 */
export async function selectBackend(
  settings: ChainSettings,
): Promise<Backend> {
  const { config } = settings;
  const links: Backend[] = [];
  for (const name of backendNames(config)) {
    try {
      links.push(await backends.load(name, config));
    } catch (error) {
      if (!(error instanceof UnknownBackendError)) throw error;
      throw new ConfigError([{
        variable: settings.nameOf("INCONTEXT_BACKEND"),
        rule: `names no registered backend${
          suggestion(name, error.registered)
        }; registered: ${error.registered.join(", ")}`,
      }]);
    }
  }
  if (links.length === 1) return links[0]!;
  return new BackendChain(links, {
    ...(config.backendFallbackTurns === undefined
      ? {}
      : { fallbackTurns: config.backendFallbackTurns }),
  });
}

/** The backends that count: a chain's, or the one. */
export function linksOf(backend: Backend): readonly Backend[] {
  return backend instanceof BackendChain ? backend.links : [backend];
}

/** `incontext check`'s backend line: each backend, what it counts as, and where. */
export function backendLine(
  settings: ChainSettings,
  backend: Backend,
): string {
  const names = backendNames(settings.config);
  const links = linksOf(backend);
  const url = settings.config.tokenizerUrl;
  const each = names.map((name, i) =>
    `${name} (counts as ${links[i]?.source ?? "unknown"})`
  ).join(", then ");
  const at = url === undefined ? "" : ` at ${publicUrl(url)}`;
  if (names.length === 1) return `${each}${at}`;
  const turns = settings.config.backendFallbackTurns;
  return `${each}${at}; a model whose count a response's usage contradicts moves to the next backend ${
    turns === undefined
      ? "until restart"
      : `for ${turns} verified counts, then ${names[0]} again`
  }`;
}

/** Why the configuration counts with these backends, in words. */
export function backendWhy(settings: ChainSettings): string {
  const { config, backendSource } = settings;
  const { reason } = chooseBackends({
    ...(backendSource === undefined ? {} : { named: backendNames(config) }),
    folder: config.tokenizerDir !== undefined,
    url: config.tokenizerUrl !== undefined,
  });
  return reason === "named"
    ? `${backendSource} names it`
    : `INCONTEXT_BACKEND is unset and ${WHY[reason]}`;
}

const WHY: Record<Exclude<BackendReason, "named">, string> = {
  "folder and url":
    "both INCONTEXT_TOKENIZER_DIR and INCONTEXT_TOKENIZER_URL are set: the model folder counts in process, vLLM's /tokenize behind it",
  folder:
    "only INCONTEXT_TOKENIZER_DIR is set: the model folder counts in process",
  url:
    "only INCONTEXT_TOKENIZER_URL is set: vLLM's /tokenize counts; set INCONTEXT_TOKENIZER_DIR too to count in process",
  default: "so is INCONTEXT_TOKENIZER_DIR: vllm is the default",
};

/** One backend's start-up probe. */
export interface LinkProbe {
  /** Its name in the configuration. */
  readonly name: string;
  readonly backend: Backend;
  readonly probe: TokenizerProbe;
}

/**
 * Probes every backend of the chain at once, so that a later one that
 * cannot count, or whose server has another context length, shows at
 * start-up rather than when a model moves to it.
 */
export async function probeLinks(
  settings: ChainSettings & { readonly contextLength: number },
  backend: Backend,
): Promise<LinkProbe[]> {
  const names = backendNames(settings.config);
  const links = linksOf(backend);
  return await Promise.all(links.map(async (link, i) => ({
    name: names[i] ?? link.source,
    backend: link,
    probe: await probeTokenizer(link, settings.contextLength, {
      backend: names[i] ?? link.source,
      url: settings.config.tokenizerUrl,
    }),
  })));
}

/** The probe that speaks for the context length: a contradicting one, else the first that compares it, else the first. */
export function contextProbe(probes: readonly LinkProbe[]): LinkProbe {
  return probes.find((p) => p.probe.status === "mismatch") ??
    probes.find((p) => p.backend.servedContext !== undefined) ?? probes[0]!;
}
