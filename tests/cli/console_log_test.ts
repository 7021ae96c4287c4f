import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import { serveFakeUpstream } from "../../src/testing/mod.ts";
import { freePort, spawnCli } from "../_kit/cli_process.ts";

const SECRET = "sk-canary-3f9a";

/** The JSON records among a child's output lines. */
function jsonRecords(text: string): Record<string, unknown>[] {
  return text.split("\n").filter((line) => line.startsWith("{")).map((line) =>
    JSON.parse(line)
  );
}

Deno.test("incontext serve logs JSON lines: the start-up record names upstream and tokenizer without their query, then an access record", async () => {
  await using upstream = await serveFakeUpstream({ maxModelLen: 65536 });
  const port = freePort();
  const root = new URL(upstream.url);
  // Credentials in a URL are refused at start-up; a query string may hold a key.
  const withSecrets = `http://${root.host}/?key=${SECRET}`;
  const tokenizer = new URL(upstream.tokenizeUrl);
  tokenizer.search = `?key=${SECRET}`;
  await using server = spawnCli([
    "serve",
    "--upstream",
    withSecrets,
    "--listen",
    `127.0.0.1:${port}`,
  ], {
    env: {
      INCONTEXT_CONTEXT_LENGTH: "65536",
      INCONTEXT_COMPRESSION_WINDOW_TOKENS: "55705",
      INCONTEXT_TOKENIZER_URL: tokenizer.href,
      INCONTEXT_LOG_FORMAT: "json",
    },
  });
  await server.stdout.waitFor(/listening on/);
  const started = jsonRecords(server.stdout.text).find((r) =>
    String(r.message).includes("listening on")
  )!;
  strictEqual(started.level, "INFO");
  strictEqual(started.logger, "incontext.server");
  deepStrictEqual(started.properties, {
    listen: `http://127.0.0.1:${port}`,
    upstream: `http://${root.host}`,
    // The path is shown (a wrong one must be seen); the query never.
    tokenizer: `http://${tokenizer.host}/tokenize`,
    backend: "vllm-tokenize",
    window: 55705,
    windowSource: "INCONTEXT_COMPRESSION_WINDOW_TOKENS",
    contextLength: 65536,
    contextLengthSource: "INCONTEXT_CONTEXT_LENGTH",
  });
  const response = await fetch(
    `http://127.0.0.1:${port}/v1/chat/completions`,
    {
      method: "POST",
      headers: { "content-type": "application/json", "x-request-id": "r-1" },
      body: JSON.stringify({
        model: "m",
        messages: [{ role: "user", content: "hi" }],
      }),
    },
  );
  await response.body?.cancel();
  await server.stdout.waitFor(/"logger":"incontext\.access"/);
  const access = jsonRecords(server.stdout.text).find((r) =>
    r.logger === "incontext.access"
  )!;
  const properties = access.properties as Record<string, unknown>;
  strictEqual(properties.requestId, "r-1");
  strictEqual(properties.status, 200);
  strictEqual(properties.action, "set");
  server.child.kill("SIGTERM");
  strictEqual((await server.child.status).code, 0);
  await Promise.all([server.stdout.done, server.stderr.done]);
  const all = server.stdout.text + server.stderr.text;
  ok(!all.includes(SECRET), all);
  for (const line of server.stdout.text.split("\n")) {
    if (line !== "") JSON.parse(line);
  }
});

Deno.test("incontext serve at INCONTEXT_LOG_LEVEL=warning writes warnings only, as text", async () => {
  const port = freePort();
  await using server = spawnCli([
    "serve",
    "--upstream",
    `http://127.0.0.1:${freePort()}`,
    "--listen",
    `127.0.0.1:${port}`,
  ], {
    env: {
      INCONTEXT_CONTEXT_LENGTH: "65536",
      INCONTEXT_COMPRESSION_WINDOW_TOKENS: "55705",
      INCONTEXT_TOKENIZER_URL: `http://127.0.0.1:${freePort()}/tokenize`,
      INCONTEXT_LOG_LEVEL: "warning",
    },
  });
  await server.stderr.waitFor(/upstream not reachable at start-up/);
  server.child.kill("SIGTERM");
  strictEqual((await server.child.status).code, 0);
  await Promise.all([server.stdout.done, server.stderr.done]);
  ok(!server.stdout.text.includes("listening on"), server.stdout.text);
  ok(
    /\[WRN\] incontext\.server: upstream not reachable/.test(
      server.stderr.text,
    ),
    server.stderr.text,
  );
});

Deno.test("incontext serve reports a bad INCONTEXT_LOG_LEVEL and INCONTEXT_LOG_FORMAT like any bad setting", async () => {
  await using server = spawnCli(["serve", "--upstream", "http://127.0.0.1:1"], {
    env: {
      INCONTEXT_CONTEXT_LENGTH: "65536",
      INCONTEXT_COMPRESSION_WINDOW_TOKENS: "55705",
      INCONTEXT_TOKENIZER_URL: "http://127.0.0.1:1/tokenize",
      INCONTEXT_LOG_LEVEL: "loud",
      INCONTEXT_LOG_FORMAT: "xml",
    },
  });
  strictEqual((await server.child.status).code, 2);
  await server.stderr.done;
  const lines = server.stderr.text.split("\n").filter((l) =>
    l.startsWith("  ")
  );
  deepStrictEqual(lines, [
    "  INCONTEXT_LOG_LEVEL must be debug, info, warning or error",
    "  INCONTEXT_LOG_FORMAT must be text or json",
  ]);
});
