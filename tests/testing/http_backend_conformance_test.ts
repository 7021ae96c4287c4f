// Covers: src/testing/http_backend_conformance.ts
import { ok, rejects } from "node:assert/strict";
import { CONFORMANCE_MARKER } from "../../src/testing/backend_conformance.ts";
import {
  httpBackendConformanceCases,
  type HttpConformanceBackendOptions,
} from "../../src/testing/http_backend_conformance.ts";
import { serveFakeVllmTokenizer } from "../../src/testing/fake_vllm_server.ts";
import { VllmBackend } from "../../src/backends/vllm/mod.ts";
import { CountError } from "../../src/core/errors.ts";

const CONTEXT = 8192;

/** A vLLM backend that names its URL, key and all, when a count fails. */
class QuotingBackend extends VllmBackend {
  readonly #url: string;
  constructor(options: HttpConformanceBackendOptions) {
    super(options);
    this.#url = options.url;
  }
  override async count(
    ...args: Parameters<VllmBackend["count"]>
  ): ReturnType<VllmBackend["count"]> {
    try {
      return await super.count(...args);
    } catch (error) {
      throw new CountError(`no count from ${this.#url}`, { cause: error });
    }
  }
}

/** A vLLM backend whose `fetch`, or whose options, break one rule. */
const FLAWS: Record<
  string,
  (options: HttpConformanceBackendOptions) => VllmBackend
> = {
  "follows redirects": (options) =>
    new VllmBackend({
      ...options,
      fetch: (input, init) => fetch(input, { ...init, redirect: "follow" }),
    }),
  "retries a failed answer": (options) =>
    new VllmBackend({
      ...options,
      fetch: async (input, init) => {
        const first = await fetch(input, init);
        if (first.ok) return first;
        await first.body?.cancel();
        return await fetch(input, init);
      },
    }),
  "quotes its URL in an error": (options) => new QuotingBackend(options),
  "drops the User-Agent": (options) =>
    new VllmBackend({
      ...options,
      fetch: (input, init) => {
        const headers = new Headers(init?.headers);
        headers.delete("user-agent");
        return fetch(input, { ...init, headers });
      },
    }),
  "takes any URL": (options) =>
    new VllmBackend({ ...options, url: "http://127.0.0.1:8000/tokenize" }),
};

const CAUGHT_BY: Record<string, string> = {
  "follows redirects": "follows no redirect: nothing reaches the other origin",
  "retries a failed answer":
    "fails the count on http-500, asking no endpoint twice",
  "quotes its URL in an error":
    "keeps the key, the prompt and the host out of errors and logs",
  "drops the User-Agent":
    "sends JSON, its User-Agent and the key in its header alone",
  "takes any URL": "refuses a URL that breaks a rule, never echoing it",
};

Deno.test("the HTTP suite fails a backend that breaks one of its rules", async (t) => {
  for (const [flaw, make] of Object.entries(FLAWS)) {
    const name = CAUGHT_BY[flaw]!;
    await t.step(`${flaw} fails "${name}"`, async () => {
      const cases = httpBackendConformanceCases({
        serve: () => serveFakeVllmTokenizer({ maxModelLen: CONTEXT }),
        backend: make,
        request: { messages: [{ role: "user", content: CONFORMANCE_MARKER }] },
        contextLength: CONTEXT,
        badAnswers: ["http-500"],
      });
      const found = cases.find((c) => c.name === name);
      ok(found, `no case named ${name}`);
      await rejects(found.run());
    });
  }
});

Deno.test("the HTTP suite passes the vLLM backend it is shown with, and says why a case is skipped", async (t) => {
  const cases = httpBackendConformanceCases({
    serve: () => serveFakeVllmTokenizer({ maxModelLen: CONTEXT }),
    backend: (options) => new VllmBackend(options),
    request: { messages: [{ role: "user", content: CONFORMANCE_MARKER }] },
    contextLength: CONTEXT,
    badAnswers: ["http-500", "non-json"],
    skip: { "caches a count, and not a failure": "counts nothing twice" },
  });
  ok(cases.some((c) => c.skip === "counts nothing twice"));
  for (const c of cases) {
    await t.step({ name: c.name, ignore: c.skip !== undefined, fn: c.run });
  }
});
