/**
 * The other thread of `answering_thread.ts`: answers each `mget`, then
 * counts the answer in shared memory.
 */
import { parentPort, workerData } from "node:worker_threads";

const { counter, value } = workerData as {
  counter: Int32Array;
  value: string;
};
parentPort!.on("message", ({ id, keys }: { id: number; keys: string[] }) => {
  parentPort!.postMessage({ id, values: keys.map(() => value) });
  Atomics.add(counter, 0, 1);
});
