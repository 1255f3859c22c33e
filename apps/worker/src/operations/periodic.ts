/**
 * A background duty of the sweeper run every `intervalMs` (the first pass after `firstAfterMs`,
 * default a minute), one pass at a time: a pass still running when the next is due is not doubled.
 */
export function runPeriodically(
  pass: () => Promise<unknown>,
  onError: (error: unknown) => void,
  options: { intervalMs: number; firstAfterMs?: number },
) {
  let running = false;
  const tick = () => {
    if (running) return;
    running = true;
    pass()
      .catch(onError)
      .finally(() => (running = false));
  };
  const first = setTimeout(tick, options.firstAfterMs ?? 60_000);
  const timer = setInterval(tick, options.intervalMs);
  first.unref();
  timer.unref();
  return {
    stop: () => {
      clearTimeout(first);
      clearInterval(timer);
    },
  };
}
