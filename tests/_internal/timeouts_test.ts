import { deepStrictEqual, strictEqual } from "node:assert/strict";
import {
  clearQueuedTimeout,
  setQueuedTimeout,
} from "../../src/_internal/timeouts.ts";

Deno.test("setQueuedTimeout() runs what is not cleared, in order, and holds no timer after", async (t) => {
  await t.step(
    "a cleared timeout never runs; the others run in order",
    async () => {
      const ran: number[] = [];
      const { promise, resolve } = Promise.withResolvers<void>();
      setQueuedTimeout(() => ran.push(1), 5);
      const cleared = setQueuedTimeout(() => ran.push(2), 5);
      setQueuedTimeout(() => {
        ran.push(3);
        resolve();
      }, 5);
      clearQueuedTimeout(cleared);
      clearQueuedTimeout(cleared); // twice does nothing
      await promise;
      deepStrictEqual(ran, [1, 3]);
    },
  );
  await t.step("a timeout set from a callback runs later", async () => {
    // Judged by order, not by the clock: the inner timeout, due 5 ms after
    // the outer one ran, comes after a runtime timer of 0 ms set just before it.
    const ran: string[] = [];
    const { promise, resolve } = Promise.withResolvers<void>();
    setQueuedTimeout(() => {
      ran.push("outer");
      setTimeout(() => ran.push("next turn"), 0);
      setQueuedTimeout(() => {
        ran.push("inner");
        resolve();
      }, 5);
    }, 5);
    await promise;
    deepStrictEqual(ran, ["outer", "next turn", "inner"]);
  });
  await t.step("durations have their own queues", async () => {
    const ran: string[] = [];
    const { promise, resolve } = Promise.withResolvers<void>();
    setQueuedTimeout(() => {
      ran.push("long");
      resolve();
    }, 20);
    setQueuedTimeout(() => ran.push("short"), 2);
    await promise;
    deepStrictEqual(ran, ["short", "long"]);
  });
  await t.step("clearing every timeout stops the runtime timer", () => {
    // The queue arms runtime timers through the globals: count them.
    const { setTimeout: realSet, clearTimeout: realClear } = globalThis;
    const pending = new Set<unknown>();
    globalThis.setTimeout = ((callback: () => void, ms?: number) => {
      const id = realSet(callback, ms);
      pending.add(id);
      return id;
    }) as typeof setTimeout;
    globalThis.clearTimeout = ((id?: number) => {
      pending.delete(id);
      realClear(id);
    }) as typeof clearTimeout;
    try {
      const timeouts = [1, 2, 3].map(() => setQueuedTimeout(() => {}, 60_001));
      strictEqual(pending.size, 1); // one runtime timer for the queue
      clearQueuedTimeout(timeouts[2]!);
      clearQueuedTimeout(timeouts[0]!);
      strictEqual(pending.size, 1);
      clearQueuedTimeout(timeouts[1]!);
      strictEqual(pending.size, 0);
    } finally {
      globalThis.setTimeout = realSet;
      globalThis.clearTimeout = realClear;
    }
  });
});
