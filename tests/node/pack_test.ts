// Covers: tools/pack.ts
import { deepStrictEqual, throws } from "node:assert/strict";
import { OPTIONAL_PEERS, withOptionalPeers } from "../../tools/pack.ts";

Deno.test("withOptionalPeers() moves each named package to an optional peer at its version", () => {
  deepStrictEqual(
    withOptionalPeers(
      { "@logtape/logtape": "2.4.2", "gpt-tokenizer": "4.0.0" },
      ["gpt-tokenizer"],
    ),
    {
      dependencies: { "@logtape/logtape": "2.4.2" },
      peerDependencies: { "gpt-tokenizer": "4.0.0" },
      peerDependenciesMeta: { "gpt-tokenizer": { optional: true } },
    },
  );
  deepStrictEqual(withOptionalPeers({ "js-yaml": "5.5.0" }, []), {
    dependencies: { "js-yaml": "5.5.0" },
  });
});

Deno.test("withOptionalPeers() refuses a package the code does not import", () => {
  throws(
    () => withOptionalPeers({ "js-yaml": "5.5.0" }, ["gpt-tokenizer"]),
    /Cannot declare gpt-tokenizer an optional peer/,
  );
});

Deno.test("OPTIONAL_PEERS names only packages the package's deno.json imports", async () => {
  const manifest = JSON.parse(
    await Deno.readTextFile(new URL("../../deno.json", import.meta.url)),
  ) as { name: string; imports: Record<string, string> };
  for (const peer of OPTIONAL_PEERS[manifest.name] ?? []) {
    deepStrictEqual(
      manifest.imports[peer]?.startsWith(`npm:${peer}@`),
      true,
      peer,
    );
  }
});
