// Covers: src/core/backend_chain.ts, src/core/wrapped_backend.ts
import {
  deepStrictEqual,
  ok,
  rejects,
  strictEqual,
  throws,
} from "node:assert/strict";
import { type CountCheck, CountError } from "../../mod.ts";
import { BackendChain } from "../../src/proxy/mod.ts";
import { TemplateRejectedError } from "../../src/core/errors.ts";
import { TimedBackend } from "../../src/proxy/timed_backend.ts";
import { FakeBackend } from "../../src/testing/mod.ts";
import { captureLogs } from "../_kit/log_capture.ts";

const OPTIONS = { contextLength: 8192 };
const chat = (model: string) => ({ model, messages: [] });

/** A chain of fakes counting `counts`, sourced `first`, `second`, `third`. */
function chainOf(counts: number[], fallbackTurns?: number) {
  const names = ["first", "second", "third"];
  const links = counts.map((count, i) =>
    new FakeBackend({ count, source: names[i]! })
  );
  const chain = new BackendChain(
    links,
    fallbackTurns === undefined ? {} : { fallbackTurns },
  );
  return { chain, links };
}

/** Counts a request of `model` and checks it against `served`, as the proxy does. */
async function turn(
  chain: BackendChain,
  model: string,
  served: number,
): Promise<string> {
  const counted = await chain.count(chat(model), OPTIONS);
  chain.countChecked({
    model,
    source: counted.source!,
    counted: counted.tokens,
    served,
  });
  return counted.source!;
}

Deno.test("BackendChain.count() counts with the first backend and labels the count with its source", async () => {
  const { chain, links } = chainOf([10, 12]);
  deepStrictEqual(await chain.count(chat("m"), OPTIONS), {
    tokens: 10,
    estimatedTokens: 0,
    source: "first",
  });
  strictEqual(links[1]!.calls.length, 0);
  strictEqual(chain.source, "first,second");
});

Deno.test("BackendChain.countChecked() moves only the contradicted model to the next backend, with one log line", async (t) => {
  await using logs = await captureLogs();
  const { chain } = chainOf([10, 12]);
  await t.step("an equal check keeps the model where it is", async () => {
    strictEqual(await turn(chain, "m", 10), "first");
    strictEqual(chain.backendFor("m").source, "first");
    deepStrictEqual(logs.lines, []);
  });
  await t.step("a difference moves it, and says so once", async () => {
    strictEqual(await turn(chain, "m", 12), "first");
    strictEqual(chain.backendFor("m").source, "second");
    strictEqual(chain.backendFor("other").source, "first");
    const moves = logs.lines.filter((l) => l.includes("now counts with"));
    strictEqual(moves.length, 1, logs.lines.join("\n"));
    ok(moves[0]!.startsWith("incontext.chain warning"), moves[0]);
    ok(
      /model=m now counts with second: a count by first differed from the server's usage \(counted=10 usage=12\); until restart/
        .test(moves[0]!),
      moves[0],
    );
  });
  await t.step("the next counts come from the next backend", async () => {
    strictEqual(await turn(chain, "m", 12), "second");
    strictEqual(await turn(chain, "other", 10), "first");
  });
  await t.step("without fallbackTurns, it stays there", async () => {
    for (let i = 0; i < 50; i++) await turn(chain, "m", 12);
    strictEqual(chain.backendFor("m").source, "second");
    strictEqual(
      logs.lines.filter((l) => l.includes("now counts with")).length,
      1,
    );
  });
});

Deno.test("BackendChain with fallbackTurns tries the first backend again after that many verified counts", async () => {
  await using logs = await captureLogs();
  const { chain } = chainOf([10, 12], 3);
  await turn(chain, "m", 12);
  strictEqual(chain.backendFor("m").source, "second");
  // A difference on the last backend verifies nothing and moves nothing.
  await turn(chain, "m", 13);
  strictEqual(chain.backendFor("m").source, "second");
  strictEqual(await turn(chain, "m", 12), "second");
  strictEqual(await turn(chain, "m", 12), "second");
  strictEqual(chain.backendFor("m").source, "second");
  strictEqual(await turn(chain, "m", 12), "second");
  strictEqual(chain.backendFor("m").source, "first");
  const back = logs.lines.filter((l) => l.includes("again after"));
  strictEqual(back.length, 1);
  ok(
    back[0]!.includes(
      "model=m counts with first again after 3 verified counts by second",
    ),
    back[0],
  );
  ok(
    logs.lines.some((l) =>
      l.includes("for 3 verified counts, then first again")
    ),
  );
  // Still wrong: the first difference sends it off again.
  strictEqual(await turn(chain, "m", 12), "first");
  strictEqual(chain.backendFor("m").source, "second");
});

Deno.test("BackendChain logs the moves between two backends once a minute at most and counts every one", async (t) => {
  await using logs = await captureLogs();
  let now = 0;
  const chain = new BackendChain([
    new FakeBackend({ count: 10, source: "first" }),
    new FakeBackend({ count: 12, source: "second" }),
  ], { fallbackTurns: 1, now: () => now });
  const lines = (level: string, text: string) =>
    logs.lines.filter((l) =>
      l.startsWith(`incontext.chain ${level}`) && l.includes(text)
    );
  await t.step("1,000 models moved: one warning", async () => {
    for (let i = 0; i < 1000; i++) await turn(chain, `model-${i}`, 12);
    strictEqual(lines("warning", "now counts with").length, 1);
    ok(
      lines("warning", "now counts with")[0]!.includes(
        "model=model-0 now counts with second",
      ),
    );
    strictEqual(lines("debug", "now counts with").length, 999);
    deepStrictEqual(chain.moves(), [
      { from: "first", to: "second", count: 1000 },
    ]);
  });
  await t.step("the moves back to the first are another pair", async () => {
    for (let i = 0; i < 1000; i++) await turn(chain, `model-${i}`, 12);
    strictEqual(lines("info", "again after").length, 1);
    strictEqual(lines("debug", "again after").length, 999);
    deepStrictEqual(chain.moves(), [
      { from: "first", to: "second", count: 1000 },
      { from: "second", to: "first", count: 1000 },
    ]);
  });
  await t.step(
    "a minute later, one more, with how many came between",
    async () => {
      now = 60_000;
      await turn(chain, "late", 12);
      const warnings = lines("warning", "now counts with");
      strictEqual(warnings.length, 2);
      ok(
        warnings[1]!.includes(
          "model=late now counts with second: a count by first differed from the server's usage (counted=10 usage=12); for 1 verified counts, then first again; 999 more moves between these two backends since the last line of them",
        ),
        warnings[1],
      );
    },
  );
});

Deno.test("BackendChain moves a model down a longer chain one backend per difference", async () => {
  const { chain } = chainOf([10, 11, 12]);
  await turn(chain, "m", 12);
  strictEqual(chain.backendFor("m").source, "second");
  await turn(chain, "m", 12);
  strictEqual(chain.backendFor("m").source, "third");
  await turn(chain, "m", 99);
  strictEqual(chain.backendFor("m").source, "third");
});

Deno.test("BackendChain.countChecked() ignores a check of a count another backend made", async () => {
  const { chain } = chainOf([10, 12]);
  const check = (source: string): CountCheck => ({
    model: "m",
    source,
    counted: 1,
    served: 2,
  });
  await chain.count(chat("m"), OPTIONS);
  // Not a label any backend of the chain gave.
  chain.countChecked(check("elsewhere"));
  strictEqual(chain.backendFor("m").source, "first");
  chain.countChecked(check("first"));
  strictEqual(chain.backendFor("m").source, "second");
  // A late check of the first backend's count, answered after the move.
  chain.countChecked(check("first"));
  strictEqual(chain.backendFor("m").source, "second");
});

Deno.test("BackendChain.count() hands a failed count to the next backend for that request alone", async (t) => {
  await t.step("a failure goes on; the model stays on the first", async () => {
    const failing = new FakeBackend({
      error: new CountError("no media"),
      source: "first",
    });
    const second = new FakeBackend({ count: 7, source: "second" });
    const chain = new BackendChain([failing, second]);
    strictEqual((await chain.count(chat("m"), OPTIONS)).source, "second");
    strictEqual(chain.backendFor("m").source, "first");
    // Its check is of the second backend's count: the model stays.
    chain.countChecked({ model: "m", source: "second", counted: 7, served: 8 });
    strictEqual(chain.backendFor("m").source, "first");
  });
  await t.step("the last backend's failure is the count's", async () => {
    const chain = new BackendChain([
      new FakeBackend({ error: new CountError("a") }),
      new FakeBackend({ error: new CountError("b"), source: "second" }),
    ]);
    await rejects(chain.count(chat("m"), OPTIONS), { message: "b" });
  });
  await t.step("a rejection by the chat template is final", async () => {
    const second = new FakeBackend({ count: 7, source: "second" });
    const chain = new BackendChain([
      new FakeBackend({ error: new TemplateRejectedError() }),
      second,
    ]);
    await rejects(chain.count(chat("m"), OPTIONS), TemplateRejectedError);
    strictEqual(second.calls.length, 0);
  });
  await t.step("an aborted count goes no further", async () => {
    const second = new FakeBackend({ count: 7, source: "second" });
    const chain = new BackendChain([new FakeBackend({ count: 1 }), second]);
    await rejects(
      chain.count(chat("m"), { ...OPTIONS, signal: AbortSignal.abort() }),
    );
    strictEqual(second.calls.length, 0);
  });
});

Deno.test("BackendChain forgets the model moved longest ago past maxModels", async () => {
  const chain = new BackendChain([
    new FakeBackend({ count: 10, source: "first" }),
    new FakeBackend({ count: 12, source: "second" }),
  ], { maxModels: 2 });
  for (const model of ["a", "b", "c"]) await turn(chain, model, 12);
  deepStrictEqual(
    ["a", "b", "c"].map((m) => chain.backendFor(m).source),
    ["first", "second", "second"],
  );
});

Deno.test("BackendChain reads caps as its first backend and checks its options", () => {
  const first = new FakeBackend({ count: 1, outputLimit: 600 });
  const chain = new BackendChain([first, new FakeBackend({ count: 2 })]);
  strictEqual(chain.outputBudgetLimit({}, OPTIONS), 600);
  throws(() => new BackendChain([]), TypeError);
  throws(() => new BackendChain([first], { fallbackTurns: 0 }), RangeError);
  throws(() => new BackendChain([first], { maxModels: 1.5 }), RangeError);
});

Deno.test("WrappedBackend.countChecked() reaches the wrapped backend", async () => {
  const { chain } = chainOf([10, 12]);
  const timed = new TimedBackend(chain, () => {});
  const counted = await timed.count(chat("m"), OPTIONS);
  ok(typeof counted === "object");
  timed.countChecked({
    model: "m",
    source: counted.source!,
    counted: 10,
    served: 12,
  });
  strictEqual(chain.backendFor("m").source, "second");
});

Deno.test("BackendChain hands the checks of its last backend's counts to it, and asks the current backend why it estimates", async () => {
  const heard: CountCheck[] = [];
  class Last extends FakeBackend {
    override countChecked(check: CountCheck): void {
      heard.push(check);
    }
    override estimateReason(model: string | undefined): string | undefined {
      return heard.length >= 2 && model === "m" ? "contradicted" : undefined;
    }
  }
  const chain = new BackendChain([
    new FakeBackend({ count: 10, source: "first" }),
    new Last({ count: 11, source: "last" }),
  ]);
  await turn(chain, "m", 12);
  strictEqual(heard.length, 0, "the chain moves the first backend's models");
  strictEqual(chain.estimateReason("m"), undefined);
  await turn(chain, "m", 12);
  await turn(chain, "m", 12);
  strictEqual(heard.length, 2);
  strictEqual(chain.estimateReason("m"), "contradicted");
  strictEqual(chain.estimateReason("other"), undefined, "on the first backend");
  const timed = new TimedBackend(chain, () => {});
  strictEqual(timed.estimateReason("m"), "contradicted");
});
