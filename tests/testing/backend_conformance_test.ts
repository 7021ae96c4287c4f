// Covers: src/testing/backend_conformance.ts, src/testing/fake_backend.ts
import { ok, rejects } from "node:assert/strict";
import { fileURLToPath } from "node:url";
import {
  Backend,
  type CountOptions,
  type JsonObject,
  type RequestKind,
} from "../../src/core/backend.ts";
import {
  backendConformanceCases,
  type BackendConformanceOptions,
  CONFORMANCE_MARKER,
} from "../../src/testing/backend_conformance.ts";
import { CountError } from "../../src/core/errors.ts";
import { FakeBackend } from "../../src/testing/fake_backend.ts";
import { serveFakeVllmTokenizer } from "../../src/testing/fake_vllm_server.ts";
import { LocalBackend } from "../../src/backends/local/mod.ts";
import { VllmBackend } from "../../src/backends/vllm/mod.ts";

const CONTEXT = 8192;

async function runAll(
  t: Deno.TestContext,
  options: BackendConformanceOptions,
): Promise<void> {
  for (const c of backendConformanceCases(options)) {
    await t.step({ name: c.name, ignore: c.skip !== undefined, fn: c.run });
  }
}

const length = (request: JsonObject) => JSON.stringify(request).length;

Deno.test("conformance: FakeBackend", async (t) => {
  await runAll(t, {
    create: () => new FakeBackend({ count: length }),
    createFailing: () => new FakeBackend({ error: new CountError("down") }),
    contextLength: 65536,
  });
});

Deno.test("conformance: vllm against the vLLM protocol server", async (t) => {
  await using server = await serveFakeVllmTokenizer({ maxModelLen: CONTEXT });
  await using failing = await serveFakeVllmTokenizer({
    maxModelLen: CONTEXT,
    fault: "http-500",
  });
  await runAll(t, {
    create: () => new VllmBackend({ url: server.url, cache: null }),
    createFailing: () => new VllmBackend({ url: failing.url, cache: null }),
    contextLength: CONTEXT,
  });
  for (const kind of ["completion", "responses"] as const) {
    await t.step(`${kind} requests`, async (t) => {
      await runAll(t, {
        create: () => new VllmBackend({ url: server.url, cache: null }),
        createFailing: () => new VllmBackend({ url: failing.url, cache: null }),
        contextLength: CONTEXT,
        kind,
        ...KIND_REQUESTS[kind],
      });
    });
  }
});

Deno.test("conformance: local over a model folder", async (t) => {
  const dir = fileURLToPath(
    new URL("../fixtures/model_folder/", import.meta.url),
  );
  const backend = new LocalBackend({ dir, cache: null });
  try {
    await runAll(t, {
      create: () => backend,
      createFailing: () =>
        new LocalBackend({ dir: `${dir}missing/`, cache: null }),
      contextLength: CONTEXT,
    });
  } finally {
    await backend[Symbol.asyncDispose]();
  }
});

const KIND_REQUESTS: Record<
  Exclude<RequestKind, "chat">,
  Pick<BackendConformanceOptions, "request" | "grow">
> = {
  completion: {
    request: { model: "m", prompt: `Once upon a time ${CONFORMANCE_MARKER}` },
    grow: (request, text) => ({
      ...request,
      prompt: `${request.prompt}${text}`,
    }),
  },
  responses: {
    request: {
      model: "m",
      instructions: "Be terse.",
      input: `Say hello. ${CONFORMANCE_MARKER}`,
    },
    grow: (request, text) => ({ ...request, input: `${request.input}${text}` }),
  },
};

/** A backend that breaks one rule of the contract, to show the suite catches it. */
class BrokenBackend extends Backend {
  readonly source: string;
  readonly #flaw: string;
  constructor(flaw: string) {
    super();
    this.#flaw = flaw;
    this.source = flaw === "url-source" ? "http://10.0.0.1/tokenize" : "broken";
  }
  count(request: JsonObject, options: CountOptions): Promise<number> {
    switch (this.#flaw) {
      case "mutates":
        (request as Record<string, unknown>).seen = true;
        break;
      case "quotes":
        return Promise.reject(
          new CountError("failed", {
            cause: new Error(`server said: ${JSON.stringify(request)}`),
          }),
        );
      case "ignores-abort":
        break;
      case "constant":
        return Promise.resolve(5);
      case "plain-error":
        return Promise.reject(new Error("not a CountError"));
    }
    if (this.#flaw !== "ignores-abort") options.signal?.throwIfAborted();
    return Promise.resolve(length(request));
  }
}

Deno.test("the conformance suite fails a backend that breaks the contract", async (t) => {
  const expectations: [string, string][] = [
    ["url-source", "source is a non-blank label without a URL"],
    ["mutates", "never changes the request"],
    ["quotes", "never quotes the request in a count error"],
    ["ignores-abort", "fails the count when the caller aborts"],
    ["constant", "counts a longer conversation as longer"],
    ["plain-error", "fails the count with a CountError when the server fails"],
  ];
  for (const [flaw, caseName] of expectations) {
    await t.step(`${flaw} fails "${caseName}"`, async () => {
      const cases = backendConformanceCases({
        create: () => new BrokenBackend(flaw),
        createFailing: () => new BrokenBackend(flaw),
        contextLength: CONTEXT,
      });
      const found = cases.find((c) => c.name === caseName);
      ok(found, `no case named ${caseName}`);
      await rejects(found.run());
    });
  }
  await t.step("a skipped case says why", () => {
    const cases = backendConformanceCases({
      create: () => new FakeBackend(),
      createFailing: () => new FakeBackend(),
      contextLength: CONTEXT,
      skip: { "counts the request": "counts nothing" },
    });
    ok(cases.some((c) => c.skip === "counts nothing"));
  });
});
