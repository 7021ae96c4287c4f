import { ok, strictEqual } from "node:assert/strict";
import { requestIdOf } from "../../src/_internal/request_id.ts";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

Deno.test("requestIdOf() takes a short visible-ASCII id and replaces any other", () => {
  strictEqual(requestIdOf("abc-123_X"), "abc-123_X");
  for (const bad of ["has space", "x".repeat(129), "new\nline", "", "é"]) {
    const id = requestIdOf(bad);
    ok(UUID.test(id), `${JSON.stringify(bad)} -> ${id}`);
  }
  ok(UUID.test(requestIdOf(null)));
});
