/**
 * How many times a chain of `setTimeout(0)` callbacks ran while `work`
 * settled: 0 or 1 when `work` blocked this thread's event loop throughout.
 */
export async function timerTicksDuring<T>(
  work: () => Promise<T>,
): Promise<{ ticks: number; result: T }> {
  let ticks = 0;
  let settled = false;
  const tick = (): void => {
    ticks++;
    if (!settled) setTimeout(tick, 0);
  };
  setTimeout(tick, 0);
  try {
    const result = await work();
    return { ticks, result };
  } finally {
    settled = true;
  }
}
