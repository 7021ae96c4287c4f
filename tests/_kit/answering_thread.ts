/**
 * A store connection whose answers come from another thread, as a real
 * store's come from its socket: through the event loop, not as a promise
 * already resolved. The thread tells, through shared memory, how many
 * answers it has sent, so that a test can hold its own thread until an
 * answer is on its way and see what the loop makes of it then.
 */
import { Worker } from "node:worker_threads";
import type { StoreConnection } from "../../src/replicas/connection.ts";

const SCRIPT = new URL("./answering_thread_worker.ts", import.meta.url);

/** The connection, and how many answers the other thread has sent. */
export interface AnsweringThread extends AsyncDisposable {
  readonly connection: StoreConnection;
  /** Answers sent so far, read at once (without waiting for the loop). */
  sent(): number;
}

/** Starts the thread; each `mget` gets `value` for every key. */
export function answeringThread(value: string): AnsweringThread {
  const counter = new Int32Array(new SharedArrayBuffer(4));
  const worker = new Worker(SCRIPT, { workerData: { counter, value } });
  const waiting = new Map<number, (values: (string | null)[]) => void>();
  let next = 0;
  worker.on("message", ({ id, values }) => {
    waiting.get(id)?.(values);
    waiting.delete(id);
  });
  return {
    connection: {
      mget: (keys) =>
        new Promise((resolve) => {
          const id = next++;
          waiting.set(id, resolve);
          worker.postMessage({ id, keys });
        }),
      set: () => Promise.resolve(),
      onReady: (listener) => queueMicrotask(listener),
      onError: () => {},
      close: () => Promise.resolve(),
    },
    sent: () => Atomics.load(counter, 0),
    async [Symbol.asyncDispose]() {
      await worker.terminate();
    },
  };
}
