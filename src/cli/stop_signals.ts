/**
 * The signals that stop the commands that serve (`serve`, `tokenize-server`,
 * `demo-upstream`), one path for all: SIGTERM from a supervisor, SIGINT from
 * Ctrl-C, and SIGHUP, from a terminal that closed or a supervisor's reload.
 * Each stops the listener and lets the requests in flight finish.
 *
 * SIGHUP reloads nothing: the settings come from flags and the environment,
 * which a running process cannot read again, and a Hermes `config.yaml` is
 * followed as it changes, without a signal. A restart is the reload that
 * reads them all; SIGHUP's default, ending the process at once, would cut
 * the requests in flight.
 *
 * @module
 */

/** The signals that stop a server, each the same way. */
export const STOP_SIGNALS = ["SIGTERM", "SIGINT", "SIGHUP"] as const;

/** One of {@linkcode STOP_SIGNALS}. */
export type StopSignal = typeof STOP_SIGNALS[number];

/**
 * Calls `onSignal` with each stop signal that arrives, from now on.
 *
 * @param onSignal Called with the signal's name.
 * @returns What removes the listeners.
 */
export function onStopSignals(
  onSignal: (signal: StopSignal) => void,
): () => void {
  const listeners = STOP_SIGNALS.map((signal) => {
    const listener = () => onSignal(signal);
    Deno.addSignalListener(signal, listener);
    return [signal, listener] as const;
  });
  return () => {
    for (const [signal, listener] of listeners) {
      Deno.removeSignalListener(signal, listener);
    }
  };
}

/**
 * Resolves once a stop signal has arrived and `stop` has finished. The
 * listeners are in place when it returns: call it before the server says it
 * listens, so that a signal sent upon that line is never missed.
 *
 * @param stop Stops the server; run once, however many signals arrive.
 */
export function untilStopSignal(stop: () => Promise<void>): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    let stopping = false;
    const remove = onStopSignals(() => {
      if (stopping) return;
      stopping = true;
      stop().finally(remove).then(resolve, reject);
    });
  });
}
