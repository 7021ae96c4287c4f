import { strictEqual, throws } from "node:assert/strict";
import { compressionPressure, computeMaxTokens } from "../../mod.ts";

Deno.test("computeMaxTokens() matches the original plugin", async (t) => {
  await t.step("examples", () => {
    strictEqual(computeMaxTokens(64000, 1000), 63000);
    strictEqual(computeMaxTokens(64000, 1000, { safetyMargin: 1024 }), 61976);
    strictEqual(computeMaxTokens(64000, 0), 64000);
    strictEqual(computeMaxTokens(64000, 64000), null);
    strictEqual(computeMaxTokens(64000, 63999), 1);
    strictEqual(
      computeMaxTokens(64000, 60000, { minimumOutputTokens: 4000 }),
      4000,
    );
    strictEqual(
      computeMaxTokens(64000, 60001, { minimumOutputTokens: 4000 }),
      null,
    );
  });
  await t.step("rejects invalid arguments naming them", () => {
    const bad: [
      number,
      number,
      { safetyMargin?: number; minimumOutputTokens?: number },
      string,
    ][] = [
      [0, 1, {}, "'window' must be a positive integer: current value is 0"],
      [
        100,
        -1,
        {},
        "'promptTokens' must be a non-negative integer: current value is -1",
      ],
      [
        100,
        1,
        { safetyMargin: -1 },
        "'safetyMargin' must be a non-negative integer: current value is -1",
      ],
      [
        100,
        1,
        { minimumOutputTokens: 0 },
        "'minimumOutputTokens' must be a positive integer: current value is 0",
      ],
    ];
    for (const [window, prompt, options, message] of bad) {
      throws(() => computeMaxTokens(window, prompt, options), {
        name: "RangeError",
        message: `Cannot compute the output budget as ${message}`,
      });
    }
  });
});

Deno.test("compressionPressure() is P + R - 1, so the host compresses exactly when W - P < R", () => {
  strictEqual(compressionPressure(0, 1), 0);
  strictEqual(compressionPressure(1000, 4096), 5095);
  const window = 55705;
  for (const prompt of [51608, 51609, 51610, 51611]) {
    strictEqual(
      compressionPressure(prompt, 4096) >= window,
      window - prompt < 4096,
    );
  }
  throws(() => compressionPressure(-1, 1), RangeError);
  throws(() => compressionPressure(1, 0), RangeError);
});
