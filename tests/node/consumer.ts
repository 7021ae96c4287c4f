/**
 * A TypeScript consumer of the packed package. `prove.ts` compiles it with
 * `tsc --noEmit` (strict, module nodenext) in a fresh Node project, so that
 * the package's `.d.ts` files must resolve through `exports` for every entry.
 * It is type-checked only; `consumer.node.mjs` runs the same calls.
 *
 * @module
 */
import {
  Backend,
  budget,
  type BudgetResult,
  type JsonObject,
} from "@incontext/incontext";
import {
  VllmBackend,
  type VllmBackendOptions,
} from "@incontext/incontext/vllm";
import {
  type Config,
  ConfigError,
  loadConfig,
} from "@incontext/incontext/config";
import {
  type CountCache,
  countCacheKey,
  type CountCacheKind,
  createCountCache,
  sharedCountCache,
} from "@incontext/incontext/cache";
import "@incontext/incontext/count-worker";
import { type BridgeOptions, budgetedFetch } from "@incontext/incontext/fetch";
import {
  type BudgetMiddleware,
  budgetMiddleware,
} from "@incontext/incontext/middleware";
import OpenAI from "openai";
import {
  createFakeVllmTokenizerHandler,
  FakeBackend,
  type FakeVllmTokenizerHandler,
} from "@incontext/incontext/testing";

/** Budgets one request; the types must carry through every entry. */
export async function budgetOnce(
  url: string,
  cache: CountCache = sharedCountCache(),
): Promise<number | undefined> {
  const options: VllmBackendOptions = { url, cache, timeoutSeconds: 5 };
  const backend = new VllmBackend(options);
  if (!(backend instanceof Backend)) {
    throw new TypeError("The subpath and the root export different contracts");
  }
  const result: BudgetResult = await budget({
    model: "qwen",
    messages: [{ role: "user", content: "Hello" }],
  }, { window: 55705, contextLength: 65536, backend });
  const kind: CountCacheKind = cache.kind;
  return kind === "worker_threads" && result.action === "set"
    ? result.maxTokens
    : undefined;
}

/** Reads the configuration, or the variables that were wrong. */
export function configOrIssues(
  env: Record<string, string | undefined>,
): Config | string[] {
  try {
    return loadConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) {
      return error.issues.map((issue) => issue.variable);
    }
    throw error;
  }
}

/** Uses the testing doubles and the cache key, with their real types. */
export async function doubles(): Promise<string> {
  const fake: FakeVllmTokenizerHandler = createFakeVllmTokenizerHandler({
    maxModelLen: 4096,
  });
  const response: Response = await fake.handler(
    new Request("http://fake.test/tokenize", { method: "POST", body: "{}" }),
  );
  const counted = await new FakeBackend({ count: 3 }).count({ messages: [] }, {
    contextLength: 4096,
  });
  const cache = createCountCache({ inProcess: true });
  const key = await cache.getOrCount(
    await countCacheKey("fake", 4096, "{}"),
    () =>
      Promise.resolve(typeof counted === "number" ? counted : counted.tokens),
  );
  // Node 20 has no `await using`: dispose explicitly.
  await cache[Symbol.asyncDispose]();
  return `${response.status} ${key}`;
}

/** Wraps the global fetch; the result must be usable wherever `fetch` is. */
export function budgetedClient(backend: VllmBackend): OpenAI {
  const options: BridgeOptions = {
    window: 55705,
    contextLength: 65536,
    backend,
    onExhausted: "reject",
    onDecision: (result, kind) => void [result.action, kind],
  };
  const wrapped: typeof fetch = budgetedFetch(globalThis.fetch, options);
  return new OpenAI({
    baseURL: "http://127.0.0.1:8000/v1",
    apiKey: "sk-test",
    fetch: wrapped,
  });
}

/** The middleware's shape, with the types its own subpath exports. */
export function middlewareFor(backend: VllmBackend): BudgetMiddleware {
  const seen: JsonObject[] = [];
  return budgetMiddleware({
    window: 55705,
    contextLength: 65536,
    backend,
    onDecision: (result) => void seen.push(result.request),
  });
}

/** Fails to compile if the types were `any`: each line must be an error. */
export function rejectedByTheTypes(backend: VllmBackend): void {
  // @ts-expect-error: `window` is a number, so the types are real, not `any`.
  void budget({ messages: [] }, { window: "1", contextLength: 2, backend });
  // @ts-expect-error: a cache reports only the kinds it can run.
  const kind: CountCacheKind = "worker";
  void kind;
  const wrapped = budgetedFetch(fetch, {
    window: 1,
    contextLength: 2,
    backend,
  });
  // @ts-expect-error: the wrapped fetch takes what fetch takes.
  void wrapped(42);
  // @ts-expect-error: only the three exhausted policies exist.
  const policy: BridgeOptions["onExhausted"] = "drop";
  void policy;
}
