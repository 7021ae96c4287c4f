import { deepStrictEqual, strictEqual } from "node:assert/strict";
import { RecentMap } from "../../src/_internal/recent_map.ts";

const order = (map: RecentMap<string, number>) => [...map.keys()];

Deno.test("RecentMap keeps entries oldest first, moving only what is not the newest", () => {
  const map = new RecentMap<string, number>();
  map.put("a", 1);
  map.put("b", 2);
  map.put("c", 3);
  strictEqual(map.use("a"), 1);
  deepStrictEqual(order(map), ["b", "c", "a"]);
  strictEqual(map.use("a"), 1); // already the newest
  strictEqual(map.peek("b"), 2); // a peek moves nothing
  deepStrictEqual(order(map), ["b", "c", "a"]);
  map.put("a", 10); // the newest, replaced where it is
  map.put("b", 20); // moved to the end
  deepStrictEqual(order(map), ["c", "a", "b"]);
  strictEqual(map.use("a"), 10);
  deepStrictEqual(order(map), ["c", "b", "a"]);
  strictEqual(map.oldest(), "c");
  strictEqual(map.use("missing"), undefined);
  // A deleted newest key comes back at the end, and the others move again.
  strictEqual(map.delete("a"), true);
  strictEqual(map.delete("a"), false);
  map.put("d", 4);
  map.put("a", 5);
  strictEqual(map.use("d"), 4);
  deepStrictEqual(order(map), ["c", "b", "a", "d"]);
  map.clear();
  strictEqual(map.size, 0);
  strictEqual(map.oldest(), undefined);
  map.put("x", 1);
  map.put("y", 2);
  map.use("x");
  deepStrictEqual(order(map), ["y", "x"]);
});
