/**
 * The status page in a real browser: Debian's chromium, driven by
 * playwright-core. It asserts what the page draws from the proxy's real
 * decisions and saves a screenshot under the system temp dir.
 */
import { deepStrictEqual, ok, rejects, strictEqual } from "node:assert/strict";
import { join } from "node:path";
import { tmpdir } from "node:os";
import { chromium } from "playwright-core";
import { C, postJson, proxyFixture, W } from "../_kit/proxy_fixture.ts";
import { FakeBackend } from "../../src/testing/mod.ts";

const CHROMIUM = "/usr/bin/chromium";

async function requireChromium(): Promise<void> {
  try {
    await Deno.stat(CHROMIUM);
  } catch {
    throw new Error(
      `${CHROMIUM} is missing: install Debian's chromium package (apt-get install -y chromium; .ci/run does)`,
    );
  }
}

/** A user message of about `tokens` tokens, as the fake tokenizer counts (4 characters a token). */
function message(tokens: number): { role: string; content: string } {
  return { role: "user", content: "word ".repeat(Math.round(tokens * 4 / 5)) };
}

/** What the page drew, per chart. */
interface Drawn {
  readonly model: string;
  readonly points: number[];
  readonly caps: number;
  readonly compress: number;
  readonly refusals: number;
  readonly wLine: number;
  readonly wLabel: string;
  readonly cLine: number;
  /** The W line's y, and each point's y: a point above W is drawn higher. */
  readonly wY: number;
  readonly pointYs: number[];
}

async function drawn(url: string, screenshot: string): Promise<Drawn[]> {
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    // The tests run as root in a container: chromium's sandbox needs a user namespace.
    args: ["--no-sandbox"],
  });
  try {
    const page = await browser.newPage({
      viewport: { width: 900, height: 1000 },
    });
    await page.goto(`${url}/incontext/`);
    await page.waitForSelector("svg.chart");
    await page.screenshot({ path: screenshot, fullPage: true });
    return await page.$$eval("svg.chart", (charts) =>
      charts.map((svg) => {
        const all = (selector: string) => [...svg.querySelectorAll(selector)];
        const w = svg.querySelector("line.w-line")!;
        return {
          model: svg.getAttribute("data-model") ?? "",
          points: all("circle.point").map((c) =>
            Number(c.getAttribute("data-tokens"))
          ),
          caps: all("line.cap").length,
          compress: all("path.compress").length,
          refusals: all("path.refusal").length,
          wLine: Number(w.getAttribute("data-tokens")),
          wLabel: svg.querySelector("text.w-line-label")?.textContent ?? "",
          cLine: Number(
            svg.querySelector("line.c-line")?.getAttribute("data-tokens"),
          ),
          wY: Number(w.getAttribute("y1")),
          pointYs: all("circle.point").map((c) => Number(c.getAttribute("cy"))),
        };
      }));
  } finally {
    await browser.close();
  }
}

Deno.test("the status page draws each model's prompt tokens against W and the context length in chromium", async () => {
  await requireChromium();
  await using proxy = await proxyFixture();
  const history: { role: string; content: string }[] = [];
  // A conversation growing to past W - R: the last turn is a compress.
  for (const tokens of [6000, 6000, 6000, 6000, 6000, 6000, 6000, 6000, 6500]) {
    history.push(message(tokens));
    const response = await postJson(`${proxy.baseUrl}/chat/completions`, {
      model: "qwen3-8b",
      max_tokens: 8192,
      messages: history,
    });
    await response.body?.cancel();
  }
  for (const tokens of [1000, 3000]) {
    const response = await postJson(`${proxy.baseUrl}/chat/completions`, {
      model: "<b>other</b>",
      messages: [message(tokens)],
    });
    await response.body?.cancel();
  }
  const screenshot = join(tmpdir(), "incontext-status-page.png");
  const charts = await drawn(proxy.url, screenshot);
  console.log(`status page screenshot: ${screenshot}`);
  deepStrictEqual(charts.map((c) => c.model), ["qwen3-8b", "<b>other</b>"]);
  const [qwen, other] = charts as [Drawn, Drawn];
  strictEqual(qwen.points.length, 9);
  ok(qwen.points.every((p, i) => i === 0 || p > qwen.points[i - 1]!));
  strictEqual(qwen.wLine, W);
  strictEqual(qwen.wLabel, "W 55,705");
  strictEqual(qwen.cLine, C);
  strictEqual(qwen.compress, 1);
  strictEqual(qwen.refusals, 0);
  strictEqual(qwen.caps, 9);
  // Points below W are drawn below the W line (SVG y grows downwards).
  qwen.points.forEach((p, i) =>
    ok(p < W ? qwen.pointYs[i]! > qwen.wY : qwen.pointYs[i]! <= qwen.wY)
  );
  strictEqual(other.points.length, 2);
  const png = await Deno.readFile(screenshot);
  deepStrictEqual([...png.subarray(1, 4)], [0x50, 0x4e, 0x47]);
});

Deno.test("the status page marks a refusal in chromium", async () => {
  await requireChromium();
  await using proxy = await proxyFixture({ onExhausted: "reject" });
  for (const tokens of [2000, 60000]) {
    const response = await postJson(`${proxy.baseUrl}/chat/completions`, {
      model: "m",
      messages: [message(tokens)],
    });
    await response.body?.cancel();
  }
  const [chart] = await drawn(
    proxy.url,
    join(tmpdir(), "incontext-status-page-refusal.png"),
  );
  strictEqual(chart?.points.length, 2);
  strictEqual(chart.refusals, 1);
  strictEqual(chart.compress, 0);
  strictEqual(chart.caps, 1);
});

Deno.test("the status page redraws itself when new decisions arrive", async () => {
  await requireChromium();
  await using proxy = await proxyFixture();
  const send = async (tokens: number) => {
    const response = await postJson(`${proxy.baseUrl}/chat/completions`, {
      model: "m",
      messages: [message(tokens)],
    });
    await response.body?.cancel();
  };
  await send(1000);
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ["--no-sandbox"],
  });
  try {
    const page = await browser.newPage();
    await page.goto(`${proxy.url}/incontext/`);
    await page.waitForSelector("circle.point");
    strictEqual(await page.locator("circle.point").count(), 1);
    await send(2000);
    // No reload: the page reads the decisions again on its own.
    await page.waitForFunction(
      // Runs in the page (a string would need 'unsafe-eval', which the
      // page's policy refuses); this file's types have no DOM.
      () =>
        (globalThis as unknown as {
          document: { querySelectorAll(selector: string): ArrayLike<unknown> };
        }).document.querySelectorAll("circle.point").length === 2,
      undefined,
      { timeout: 30_000 },
    );
    strictEqual(await page.locator("circle.point").count(), 2);
  } finally {
    await browser.close();
  }
});

Deno.test("behind INCONTEXT_ADMIN_TOKEN the status page opens in chromium with the token as a Basic password", async () => {
  await requireChromium();
  await using proxy = await proxyFixture({ adminToken: "s3cret-admin" });
  const response = await postJson(`${proxy.baseUrl}/chat/completions`, {
    model: "m",
    messages: [message(1000)],
  });
  await response.body?.cancel();
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ["--no-sandbox"],
  });
  try {
    // Without credentials, headless chromium cannot prompt for them: the
    // navigation fails on the page's Basic challenge.
    const refused = await browser.newPage();
    await rejects(
      refused.goto(`${proxy.url}/incontext/`),
      /ERR_INVALID_AUTH_CREDENTIALS/,
    );
    // With them (what a user types at the browser's prompt), the page and
    // its own reads of the decisions pass.
    const page = await browser.newPage({
      httpCredentials: { username: "ops", password: "s3cret-admin" },
    });
    await page.goto(`${proxy.url}/incontext/`);
    await page.waitForSelector("circle.point");
    strictEqual(await page.locator("circle.point").count(), 1);
  } finally {
    await browser.close();
  }
});

Deno.test("the status page shows each model's counts verified by the server's usage in chromium", async () => {
  await requireChromium();
  // The fake upstream's usage counts 4 characters of the messages' JSON a
  // token; this backend agrees for one model and not for the other.
  const backend = new FakeBackend({
    count: (request) =>
      request.model === "wrong"
        ? 7
        : Math.ceil(JSON.stringify(request.messages).length / 4),
  });
  await using proxy = await proxyFixture({ backend });
  for (const model of ["right", "right", "wrong"]) {
    const response = await postJson(`${proxy.baseUrl}/chat/completions`, {
      model,
      messages: [message(1000)],
    });
    await response.body?.cancel();
  }
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ["--no-sandbox"],
  });
  try {
    const page = await browser.newPage({
      viewport: { width: 900, height: 1000 },
    });
    await page.goto(`${proxy.url}/incontext/`);
    await page.waitForSelector("#verification tr.differs");
    await page.screenshot({
      path: join(tmpdir(), "incontext-status-page-verified.png"),
      fullPage: true,
    });
    const rows = await page.$$eval(
      "#verification tr[data-model]",
      (trs) =>
        trs.map((tr) => ({
          model: tr.getAttribute("data-model"),
          differs: tr.classList.contains("differs"),
          cells: [...tr.querySelectorAll("td")].map((td) => td.textContent),
        })),
    );
    const served = Math.ceil(
      JSON.stringify([message(1000)]).length / 4,
    ).toLocaleString("en-US");
    deepStrictEqual(rows, [
      {
        model: "right",
        differs: false,
        cells: ["right", "2 of 2 counts verified (100.0%)", "fake", "none"],
      },
      {
        model: "wrong",
        differs: true,
        cells: [
          "wrong",
          "0 of 1 counts verified (0.0%)",
          "fake",
          `fake: counted 7, usage ${served}`,
        ],
      },
    ]);
    const headings = await page.$$eval(
      "h2 .verified",
      (spans) => spans.map((span) => span.textContent),
    );
    deepStrictEqual(headings, [
      "2 of 2 counts verified (100.0%)",
      "0 of 1 counts verified (0.0%)",
    ]);
  } finally {
    await browser.close();
  }
});
