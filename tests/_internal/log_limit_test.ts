import { deepStrictEqual, strictEqual } from "node:assert/strict";
import { getLogger } from "@logtape/logtape";
import {
  LogLimit,
  WARNING_INTERVAL_MS,
} from "../../src/_internal/log_limit.ts";
import { captureLogs } from "../_kit/log_capture.ts";

Deno.test("LogLimit.admit() lets the first of each cause through, then one an interval, with how many were held back", () => {
  let now = 1000;
  const limit = new LogLimit({ now: () => now });
  strictEqual(limit.admit("a"), 0);
  strictEqual(limit.admit("b"), 0);
  strictEqual(limit.admit("a"), undefined);
  strictEqual(limit.admit("a"), undefined);
  now += WARNING_INTERVAL_MS - 1;
  strictEqual(limit.admit("a"), undefined);
  now += 1;
  strictEqual(limit.admit("a"), 3);
  strictEqual(limit.admit("b"), 0);
  strictEqual(limit.admit("a"), undefined);
  now += 10 * WARNING_INTERVAL_MS;
  strictEqual(limit.admit("a"), 1);
});

Deno.test("LogLimit.admit() takes its interval from the options", () => {
  let now = 0;
  const limit = new LogLimit({ intervalMs: 10, now: () => now });
  strictEqual(limit.admit("a"), 0);
  now = 9;
  strictEqual(limit.admit("a"), undefined);
  now = 10;
  strictEqual(limit.admit("a"), 1);
});

Deno.test("LogLimit.log() logs at the record's level when admitted, at debug when held back", async () => {
  await using logs = await captureLogs();
  let now = 0;
  const limit = new LogLimit({ now: () => now });
  const logger = getLogger(["incontext", "test"]);
  const record = (n: number) => ({
    cause: "c",
    level: "warn" as const,
    message: "event {n}",
    first: "more are held back",
    later: "{held} held back",
    properties: { n },
  });
  limit.log(logger, record(1));
  limit.log(logger, record(2));
  now = WARNING_INTERVAL_MS;
  limit.log(logger, record(3));
  deepStrictEqual(
    logs.records.map((r) => [r.level, r.message.map(String).join("")]),
    [
      ["warning", "event 1; more are held back"],
      ["debug", "event 2"],
      ["warning", "event 3; 1 held back"],
    ],
  );
});
