/**
 * Bounded concurrency for cycles. A burst of strategies due at the same instant queues here, before any
 * quote is requested, so a cycle holds its slot from claim to recorded outcome and its quote never waits
 * behind other cycles' work.
 */
export interface Limiter {
  run<T>(task: () => Promise<T>): Promise<T>;
  readonly active: number;
  readonly queued: number;
  /** Resolves once nothing is running or queued. */
  idle(): Promise<void>;
}

export function createLimiter(limit: number): Limiter {
  if (!Number.isInteger(limit) || limit < 1) throw new RangeError(`limit must be a positive integer`);
  let active = 0;
  const waiting: (() => void)[] = [];
  let idleWaiters: (() => void)[] = [];

  const acquire = (): Promise<void> | undefined => {
    if (active < limit) {
      active++;
      return undefined;
    }
    return new Promise((resolve) => waiting.push(resolve));
  };

  // The slot passes straight to the next waiter, so a newcomer can never slip in between and overshoot.
  const release = () => {
    const next = waiting.shift();
    if (next) {
      next();
      return;
    }
    active--;
    if (active === 0) {
      const waiters = idleWaiters;
      idleWaiters = [];
      for (const resolve of waiters) resolve();
    }
  };

  return {
    async run(task) {
      await acquire();
      try {
        return await task();
      } finally {
        release();
      }
    },
    get active() {
      return active;
    },
    get queued() {
      return waiting.length;
    },
    idle() {
      if (active === 0 && waiting.length === 0) return Promise.resolve();
      return new Promise((resolve) => idleWaiters.push(resolve));
    },
  };
}
