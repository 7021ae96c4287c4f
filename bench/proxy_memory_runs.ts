/**
 * Memory across identical loads: the real server (a child process) takes
 * the same streamed load three times, each of more distinct conversations
 * than its count cache and anchor store hold, so every bound is full after
 * the first. Once idle after each run, its resident memory should settle to
 * the same level: a leak would add about the same amount per run. Resident
 * memory moves with the allocator and the machine, so this is a measurement
 * (printed), not a test.
 *
 *     deno run --config tests/deno.json -A bench/proxy_memory_runs.ts
 *
 * @module
 */
import {
  type SpawnedProxy,
  spawnProxy,
} from "../tests/reliability/_proxy_spawn.ts";
import {
  loadBody,
  request,
  serveTimedUpstream,
} from "../tests/reliability/_proxy_load.ts";

const RUNS = 3;
const PER_RUN = 2_000;
const CLIENTS = 100;
/** The count cache and the anchor store: each run has more conversations. */
const BOUND = 1_000;
const MIB = 1024 * 1024;

/** One run: `PER_RUN` streamed chat requests with ids unique to the run. */
async function load(target: string, run: number): Promise<number> {
  let issued = 0;
  let ok = 0;
  const client = async () => {
    while (issued < PER_RUN) {
      const id = `r${run}-${String(issued++).padStart(5, "0")}`;
      const outcome = await request(target, id, loadBody(id), {
        timeoutMs: 60_000,
      });
      if (outcome.status === 200 && outcome.failed === undefined) ok++;
    }
  };
  await Promise.all(Array.from({ length: CLIENTS }, client));
  return ok;
}

/**
 * The resident size once it stops moving: sampled every 500 ms until two
 * samples in a row are within 1 MiB (at most 40 samples).
 */
async function settled(proxy: SpawnedProxy): Promise<number> {
  let last = await proxy.rss();
  for (let i = 0; i < 40; i++) {
    await new Promise((resolve) => setTimeout(resolve, 500));
    const now = await proxy.rss();
    if (Math.abs(now - last) < MIB) return now;
    last = now;
  }
  return last;
}

{
  await using upstream = serveTimedUpstream("none");
  await using proxy = await spawnProxy(upstream.url, {
    INCONTEXT_TOKENIZER_URL: `${upstream.url}/tokenize`,
    INCONTEXT_CACHE_ENTRIES: String(BOUND),
    INCONTEXT_ANCHOR_ENTRIES: String(BOUND),
  });
  const target = `${proxy.url}/v1/chat/completions`;
  const levels: number[] = [await settled(proxy)];
  for (let run = 1; run <= RUNS; run++) {
    const answered = await load(target, run);
    if (answered !== PER_RUN) {
      throw new Error(`run ${run}: ${answered} of ${PER_RUN} answered`);
    }
    levels.push(await settled(proxy));
  }
  const mib = levels.map((bytes) => (bytes / MIB).toFixed(0));
  console.log(
    `proxy RSS settled: start ${
      mib[0]
    } MiB, after each of ${RUNS} runs of ${PER_RUN} streamed requests (${CLIENTS} clients): ${
      mib.slice(1).join(", ")
    } MiB`,
  );
  // The first run fills every bound; a leak would keep adding after it.
  const growth = levels[RUNS]! - levels[1]!;
  console.log(
    `from the first run's level to the last: ${(growth / MIB).toFixed(1)} MiB`,
  );
}
