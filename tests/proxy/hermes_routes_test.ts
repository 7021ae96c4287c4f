// Covers: src/proxy/options.ts, src/proxy/handler.ts, src/core/route.ts
import { ok, strictEqual } from "node:assert/strict";
import OpenAI from "openai";
import { FakeBackend } from "../../src/testing/mod.ts";
import type { LiveBudget } from "../../src/proxy/mod.ts";
import { C, proxyFixture } from "../_kit/proxy_fixture.ts";

/** Hermes' own model and a second model it names, each with its window. */
const ROUTES = [
  { model: "qwen3-coder", window: 40_000 },
  { model: "standin-wide", window: 50_000 },
];
const R = 4096;

function client(baseURL: string): OpenAI {
  return new OpenAI({ baseURL, apiKey: "sk-test", maxRetries: 0 });
}

/** The cap the upstream received last. */
function sentCap(
  upstream: { requests: readonly { path: string; body: unknown }[] },
) {
  const sent = upstream.requests.filter((r) =>
    r.path === "/v1/chat/completions"
  ).at(-1);
  return (sent?.body as { max_tokens?: number } | undefined)?.max_tokens;
}

Deno.test("the proxy budgets Hermes' routes only, each against its own window", async (t) => {
  const P = 1000;
  await using proxy = await proxyFixture({
    backend: new FakeBackend({ count: P }),
    routes: ROUTES,
  });
  const sdk = client(proxy.baseUrl);
  const ask = (model: string, cap = 65536) =>
    sdk.chat.completions.create({
      model,
      max_tokens: cap,
      messages: [{ role: "user", content: "Hello" }],
    }).withResponse();

  await t.step("model.default: W - P with its own W", async () => {
    const { response } = await ask("qwen3-coder");
    strictEqual(response.headers.get("x-incontext-action"), "set");
    strictEqual(sentCap(proxy.upstream), 40_000 - P);
  });
  await t.step(
    "a model the user named: W - P with that model's W",
    async () => {
      const { response } = await ask("standin-wide");
      strictEqual(response.headers.get("x-incontext-action"), "set");
      strictEqual(sentCap(proxy.upstream), 50_000 - P);
    },
  );
  await t.step("any other model passes untouched, and says why", async () => {
    const { response } = await ask("llama-3.3-70b", 60_000);
    strictEqual(response.headers.get("x-incontext-action"), "unchanged");
    strictEqual(
      response.headers.get("x-incontext-reason"),
      "none: outside the budgeted route (model)",
    );
    // Nothing was counted: no header names a counting source.
    strictEqual(response.headers.get("x-incontext-source"), "none");
    strictEqual(response.headers.get("x-incontext-max-tokens"), null);
    strictEqual(sentCap(proxy.upstream), 60_000);
    const view = await (await fetch(`${proxy.url}/incontext/context`)).json();
    const last = view.decisions.at(-1);
    strictEqual(last.model, "llama-3.3-70b");
    strictEqual(last.action, "unchanged");
    strictEqual(last.reason, "none: outside the budgeted route (model)");
  });
});

Deno.test("the proxy takes the window and routes in force from options.live", async () => {
  const P = 1000;
  let live: LiveBudget = { window: 40_000, routes: [ROUTES[0]!] };
  await using proxy = await proxyFixture({
    backend: new FakeBackend({ count: P }),
    live: () => live,
  });
  const sdk = client(proxy.baseUrl);
  const ask = (model: string) =>
    sdk.chat.completions.create({
      model,
      max_tokens: 65536,
      messages: [{ role: "user", content: "Hello" }],
    }).withResponse();
  await ask("qwen3-coder");
  strictEqual(sentCap(proxy.upstream), 40_000 - P);
  live = { window: 45_000, routes: [{ model: "qwen3-coder", window: 45_000 }] };
  await ask("qwen3-coder");
  strictEqual(sentCap(proxy.upstream), 45_000 - P);
  const view = await (await fetch(`${proxy.url}/incontext/context`)).json();
  strictEqual(view.window, 45_000);
});

Deno.test("clamp never sends a cap below min(caller's cap, R) across a conversation", async (t) => {
  const W = 40_000;
  let P = 0;
  await using proxy = await proxyFixture({
    window: W,
    backend: new FakeBackend({ count: () => P }),
    routes: [{ model: "qwen3-coder", window: W }],
  });
  const sdk = client(proxy.baseUrl);
  const turn = (cap = 65536) =>
    sdk.chat.completions.create({
      model: "qwen3-coder",
      max_tokens: cap,
      messages: [{ role: "user", content: "Next" }],
    }).withResponse();

  await t.step(
    "while R or more is left: min(caller's cap, W - P)",
    async () => {
      for (const prompt of [1_000, 20_000, W - R]) {
        P = prompt;
        const { response } = await turn();
        strictEqual(response.headers.get("x-incontext-action"), "set");
        strictEqual(sentCap(proxy.upstream), W - prompt);
      }
      P = 30_000;
      await turn(2000);
      strictEqual(sentCap(proxy.upstream), 2000);
    },
  );
  await t.step(
    "less than R left below W: min(caller's cap, R) while C holds it",
    async () => {
      for (const prompt of [W - R + 1, W, W + 10_000, C - R]) {
        P = prompt;
        const { response } = await turn();
        strictEqual(response.headers.get("x-incontext-action"), "compress");
        strictEqual(sentCap(proxy.upstream), R);
      }
      P = W;
      await turn(100);
      strictEqual(sentCap(proxy.upstream), 100);
      P = C - 100;
      await turn(100);
      strictEqual(sentCap(proxy.upstream), 100);
    },
  );
  await t.step(
    "once C no longer holds min(caller's cap, R): the overflow 400, no upstream call",
    async () => {
      for (
        const [prompt, cap] of [
          [C - R + 1, 65536],
          [C - 1000, 65536],
          [
            C - 1,
            65536,
          ],
          [C + 5, 65536],
          [C - 99, 100],
        ] as const
      ) {
        P = prompt;
        const sent = proxy.upstream.requests.length;
        try {
          await turn(cap);
          throw new Error("expected a 400");
        } catch (error) {
          ok(error instanceof OpenAI.BadRequestError, String(error));
          strictEqual(error.code, "context_length_exceeded");
          ok(
            error.message.includes(
              `maximum context length is ${C} tokens, and its compression window is ${W} tokens`,
            ),
            error.message,
          );
        }
        strictEqual(proxy.upstream.requests.length, sent);
      }
    },
  );
});
