// Covers: src/backends/registry.ts, src/backends/backend_registry.ts, src/config/plugins.ts
import {
  deepStrictEqual,
  ok,
  rejects,
  strictEqual,
  throws,
} from "node:assert/strict";
import type { Backend } from "../../mod.ts";
import { VllmBackend } from "../../src/backends/vllm/mod.ts";
import {
  backends,
  ConfigError,
  createBackendRegistry,
  DuplicateBackendError,
  loadBackendModules,
  loadConfig,
  UnknownBackendError,
} from "../../src/config/mod.ts";
import { FakeBackend } from "../../src/testing/mod.ts";
import { LocalBackend } from "../../src/backends/local/mod.ts";
import { TgiBackend } from "../../src/backends/tgi/mod.ts";
import { BUNDLED as ENTRIES } from "../../src/backends/registry.ts";

Deno.test("createBackendRegistry() builds only the selected backend, once", async (t) => {
  await t.step("lazy factories", async () => {
    const registry = createBackendRegistry();
    const built: string[] = [];
    const factory = (name: string) => (): Backend => {
      built.push(name);
      return new FakeBackend({ source: name });
    };
    registry.plugin("a", factory("a"));
    registry.plugin("b", factory("b"));
    deepStrictEqual(built, []);
    const first = await registry.load("b");
    strictEqual(await registry.load("b"), first);
    deepStrictEqual(built, ["b"]);
    deepStrictEqual(registry.names(), ["a", "b"]);
  });

  await t.step(
    "an asynchronous factory runs once for concurrent loads",
    async () => {
      const registry = createBackendRegistry();
      let calls = 0;
      const module = Promise.withResolvers<Backend>();
      registry.plugin("a", () => (calls++, module.promise));
      const loads = [registry.load("a"), registry.load("a")];
      module.resolve(new FakeBackend({ source: "a" }));
      const [one, two] = await Promise.all(loads);
      strictEqual(one, two);
      strictEqual(one!.source, "a");
      strictEqual(calls, 1);
    },
  );

  await t.step(
    "a factory that failed runs again on the next load",
    async () => {
      const registry = createBackendRegistry();
      const outcomes = [
        () => Promise.reject(new TypeError("module not found")),
        () => {
          throw new RangeError("bad setting");
        },
        () => new FakeBackend({ source: "third" }),
      ];
      let calls = 0;
      registry.plugin("a", () => outcomes[calls++]!());
      await rejects(registry.load("a"), TypeError);
      await rejects(registry.load("a"), RangeError);
      strictEqual((await registry.load("a")).source, "third");
      strictEqual((await registry.load("a")).source, "third");
      strictEqual(calls, 3);
    },
  );

  await t.step("a duplicate name throws at registration", () => {
    const registry = createBackendRegistry();
    registry.plugin("a", () => new FakeBackend());
    throws(
      () => registry.plugin("a", () => new FakeBackend()),
      (error: unknown) => {
        ok(error instanceof DuplicateBackendError);
        strictEqual(error.backendName, "a");
        return true;
      },
    );
  });

  await t.step("an unknown name lists the registered ones", async () => {
    const registry = createBackendRegistry();
    registry.plugin("a", () => new FakeBackend());
    registry.plugin("b", () => new FakeBackend());
    await rejects(registry.load("c"), (error: unknown) => {
      ok(error instanceof UnknownBackendError);
      strictEqual(
        error.message,
        "Cannot select backend 'c' as it is not registered: registered backends are 'a', 'b'",
      );
      deepStrictEqual(error.registered, ["a", "b"]);
      return true;
    });
  });

  await t.step("requirements are reported per name", () => {
    const registry = createBackendRegistry();
    registry.plugin("a", () => new FakeBackend(), { requires: ["X_URL"] });
    deepStrictEqual(registry.requirements("a"), ["X_URL"]);
    deepStrictEqual(registry.requirements("missing"), []);
  });

  await t.step("the factory receives the configuration", async () => {
    const registry = createBackendRegistry();
    let seen: unknown;
    registry.plugin("a", (config) => {
      seen = config.countModel;
      return new FakeBackend();
    });
    await registry.load(
      "a",
      loadConfig({ INCONTEXT_COUNT_MODEL: "qwen", INCONTEXT_BACKEND: "a" }, {
        registry,
      }),
    );
    strictEqual(seen, "qwen");
  });
});

Deno.test("backends registers the bundled local backend, which loads nothing until a count", async () => {
  ok(backends.names().includes("local"));
  deepStrictEqual(backends.requirements("local"), ["INCONTEXT_TOKENIZER_DIR"]);
  const config = loadConfig({
    INCONTEXT_BACKEND: "local",
    INCONTEXT_TOKENIZER_DIR: "/nonexistent/model",
  });
  const backend = await backends.load("local", config);
  strictEqual(await backends.load("local", config), backend);
  ok(backend instanceof LocalBackend);
  strictEqual(backend.source, "local-tokenizer");
});

// Before any other test selects tgi: a failed build is not kept.
Deno.test("backends reports a missing setting of a bundled backend, and builds it once the setting is there", async () => {
  await rejects(backends.load("tgi"), (error: unknown) => {
    ok(error instanceof ConfigError);
    deepStrictEqual(error.issues.map((i) => i.variable), [
      "INCONTEXT_TOKENIZER_URL",
    ]);
    return true;
  });
  const config = loadConfig({
    INCONTEXT_TOKENIZER_URL: "http://127.0.0.1:8080",
  });
  ok(await backends.load("tgi", config) instanceof TgiBackend);
});

Deno.test("backends registers the bundled vllm backend", async () => {
  ok(backends.names().includes("vllm"));
  deepStrictEqual(backends.requirements("vllm"), ["INCONTEXT_TOKENIZER_URL"]);
  await rejects(backends.load("vllm"), (error: unknown) => {
    ok(error instanceof ConfigError);
    deepStrictEqual(error.issues.map((i) => i.variable), [
      "INCONTEXT_TOKENIZER_URL",
    ]);
    return true;
  });
});

Deno.test("each bundled entry declares the name and settings its folder's record declares", async () => {
  for (const entry of ENTRIES) {
    const record = await entry.load();
    strictEqual(record.name, entry.name);
    deepStrictEqual(record.requires, entry.requires, entry.name);
  }
});

/** Every bundled backend: what it requires, and the source it counts under. */
const BUNDLED: [string, string[], string][] = [
  ["vllm", ["INCONTEXT_TOKENIZER_URL"], "vllm-tokenize"],
  ["local", ["INCONTEXT_TOKENIZER_DIR"], "local-tokenizer"],
  ["anchored", [], "usage-anchor"],
  ["llamacpp", ["INCONTEXT_TOKENIZER_URL"], "llamacpp-tokenize"],
  ["tgi", ["INCONTEXT_TOKENIZER_URL"], "tgi-chat-tokenize"],
  [
    "sglang",
    ["INCONTEXT_TOKENIZER_URL", "INCONTEXT_TOKENIZER_DIR"],
    "sglang-tokenize",
  ],
  ["anthropic", ["INCONTEXT_ANTHROPIC_API_KEY"], "anthropic-count-tokens"],
  ["gemini", ["INCONTEXT_GEMINI_API_KEY"], "gemini-count-tokens"],
  ["openai", [], "openai-input-tokens"],
];

Deno.test("every bundled backend is selectable by name from configuration", async (t) => {
  deepStrictEqual(
    backends.names().sort(),
    BUNDLED.map(([name]) => name).sort(),
  );
  const complete = {
    INCONTEXT_TOKENIZER_URL: "http://127.0.0.1:8000/tokenize",
    INCONTEXT_TOKENIZER_DIR: "/nonexistent/model",
    INCONTEXT_ANTHROPIC_API_KEY: "sk-ant-test",
    INCONTEXT_GEMINI_API_KEY: "gemini-test",
  };
  for (const [name, requires, source] of BUNDLED) {
    await t.step(name, async () => {
      deepStrictEqual(backends.requirements(name), requires);
      if (requires.length > 0) {
        throws(
          () => loadConfig({ INCONTEXT_BACKEND: name }),
          (error: unknown) => {
            ok(error instanceof ConfigError);
            deepStrictEqual(error.issues.map((i) => i.variable), requires);
            return true;
          },
        );
      }
      const config = loadConfig({ ...complete, INCONTEXT_BACKEND: name });
      strictEqual(config.backend, name);
      strictEqual((await backends.load(config.backend, config)).source, source);
    });
  }
});

Deno.test("loadBackendModules() imports a plugin module from a file specifier", async () => {
  ok(!backends.names().includes("acme"));
  const specifier =
    new URL("../fixtures/acme_backend.ts", import.meta.url).href;
  await loadBackendModules([specifier], { importModule: (s) => import(s) });
  const acme = await backends.load("acme");
  strictEqual(acme.source, "acme-count");
  strictEqual(await acme.count({ a: 1 }, { contextLength: 10 }), 7);
  ok(!(acme instanceof VllmBackend));
});

Deno.test("loadBackendModules() names every module that failed, by error type only", async () => {
  await rejects(
    loadBackendModules(["file:///nope/a.ts", "file:///nope/b.ts"], {
      importModule: () => Promise.reject(new TypeError("secret detail")),
    }),
    (error: unknown) => {
      ok(error instanceof ConfigError);
      strictEqual(error.issues.length, 2);
      ok(
        error.message.includes(
          "'file:///nope/b.ts' failed to import (TypeError)",
        ),
      );
      ok(!error.message.includes("secret detail"));
      return true;
    },
  );
});
