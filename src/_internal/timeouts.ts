/**
 * Timeouts for the request path that cost a list insertion instead of a
 * runtime timer each. Every request arms two or three timeouts (the count's
 * deadline, the upstream's headers and body) that it nearly always clears
 * within milliseconds; a runtime timer costs a few microseconds to create and
 * clear, a noticeable share of what the proxy spends on a request. Timeouts
 * of one duration expire in the order they were set, so one list per
 * duration, with one runtime timer armed for its oldest entry, serves them
 * all: adding and clearing are O(1), and the runtime timer is cleared as soon
 * as the list is empty, so nothing outlives the last pending timeout.
 *
 * @module
 */

/** A pending timeout; pass it to {@linkcode clearQueuedTimeout}. */
export interface QueuedTimeout {
  /** @internal */
  readonly queue: TimeoutQueue;
  /** @internal */
  readonly at: number;
  /** @internal */
  callback: (() => void) | undefined;
  /** @internal */
  previous: QueuedTimeout | undefined;
  /** @internal */
  next: QueuedTimeout | undefined;
}

/** The timeouts of one duration, oldest first. */
class TimeoutQueue {
  readonly #ms: number;
  #head: QueuedTimeout | undefined;
  #tail: QueuedTimeout | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;

  constructor(ms: number) {
    this.#ms = ms;
  }

  add(callback: () => void): QueuedTimeout {
    const entry: QueuedTimeout = {
      queue: this,
      at: performance.now() + this.#ms,
      callback,
      previous: this.#tail,
      next: undefined,
    };
    if (this.#tail === undefined) this.#head = entry;
    else this.#tail.next = entry;
    this.#tail = entry;
    if (this.#timer === undefined) this.#arm(this.#ms);
    return entry;
  }

  remove(entry: QueuedTimeout): void {
    if (entry.callback === undefined) return;
    entry.callback = undefined;
    this.#unlink(entry);
    if (this.#head === undefined && this.#timer !== undefined) {
      clearTimeout(this.#timer);
      this.#timer = undefined;
    }
  }

  #unlink(entry: QueuedTimeout): void {
    const { previous, next } = entry;
    if (previous === undefined) this.#head = next;
    else previous.next = next;
    if (next === undefined) this.#tail = previous;
    else next.previous = previous;
    entry.previous = entry.next = undefined;
  }

  #arm(ms: number): void {
    this.#timer = setTimeout(() => this.#expire(), ms);
  }

  /** Runs every expired callback, then re-arms for the oldest entry left. */
  #expire(): void {
    this.#timer = undefined;
    try {
      const now = performance.now();
      for (
        let entry = this.#head;
        entry && entry.at <= now;
        entry = this.#head
      ) {
        const { callback } = entry;
        entry.callback = undefined;
        this.#unlink(entry);
        callback?.();
      }
    } finally {
      const head = this.#head;
      // The runtime's clock and performance.now() may differ by a fraction
      // of a millisecond: never re-arm for less than one.
      if (head !== undefined && this.#timer === undefined) {
        this.#arm(Math.max(1, Math.ceil(head.at - performance.now())));
      }
    }
  }
}

const queues = new Map<number, TimeoutQueue>();

/**
 * Calls `callback` once after `ms` milliseconds, like `setTimeout`, unless
 * cleared first. For the few fixed durations of the request path: each
 * distinct `ms` keeps a queue for the life of the process.
 */
export function setQueuedTimeout(
  callback: () => void,
  ms: number,
): QueuedTimeout {
  let queue = queues.get(ms);
  if (queue === undefined) {
    queue = new TimeoutQueue(ms);
    queues.set(ms, queue);
  }
  return queue.add(callback);
}

/** Cancels a timeout; clearing one that ran or was cleared does nothing. */
export function clearQueuedTimeout(timeout: QueuedTimeout): void {
  timeout.queue.remove(timeout);
}
