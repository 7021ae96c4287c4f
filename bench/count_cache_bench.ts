/**
 * A cache hit, hashing included, for a large and a mid-sized request: the
 * worker cache against a plain in-process `Map` (the baseline), and the
 * in-process fallback. The key is hashed on every iteration, as a real
 * caller would; only the lookup differs.
 */
import { countCacheKey, createCountCache } from "../src/cache/mod.ts";

/** A compact chat-completions body of about `bytes` bytes. */
function payload(bytes: number): string {
  const messages = [];
  for (let i = 0; JSON.stringify(messages).length < bytes; i++) {
    messages.push({
      role: i % 2 === 0 ? "user" : "assistant",
      content: `message ${i} `.repeat(40),
    });
  }
  return JSON.stringify({ model: "m", messages });
}

const worker = createCountCache();
const local = createCountCache({ inProcess: true });
const compute = () => Promise.resolve(1);

for (
  const [group, body] of [["500 KB", payload(500_000)], [
    "40 KB",
    payload(40_000),
  ]] as const
) {
  const map = new Map<string, number>([[
    await countCacheKey("bench", 8192, body),
    1,
  ]]);
  await worker.getOrCount(await countCacheKey("bench", 8192, body), compute);
  await local.getOrCount(await countCacheKey("bench", 8192, body), compute);

  Deno.bench(`Map hit (${group})`, { group, baseline: true }, async () => {
    map.get(await countCacheKey("bench", 8192, body));
  });
  Deno.bench(`worker cache hit (${group})`, { group }, async () => {
    await worker.getOrCount(await countCacheKey("bench", 8192, body), compute);
  });
  Deno.bench(`in-process cache hit (${group})`, { group }, async () => {
    await local.getOrCount(await countCacheKey("bench", 8192, body), compute);
  });
}
