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

/**
 * Cycles one replica runs at once. A burst is bounded by the service, not by us: the cap is high (the
 * cycles' time is mostly spent waiting on the service), and each cycle holds its place from claim to
 * recorded outcome, so its quote and its order stay together. Under a pace of the replica's own
 * (`api.rateLimit`), every request waits its turn at one first-come gate where at most one request of each
 * cycle in flight (and a few of tracking and maintenance) can queue; the cap is then lowered so that an
 * order's wait there, (cycles in flight) / rate, stays within half of its quote's usable window.
 */
export function cycleConcurrency(
  engine: { concurrency: number; quoteWindowMs: number; deadlineMarginMs: number },
  ratePerSecond?: number,
): number {
  if (ratePerSecond === undefined) return engine.concurrency;
  const usableSeconds = Math.max(0, engine.quoteWindowMs - engine.deadlineMarginMs) / 1000;
  const paced = Math.floor((ratePerSecond * usableSeconds) / 2) - GATE_SHARERS;
  return Math.max(1, Math.min(engine.concurrency, paced));
}

/** Requests of tracking and maintenance that may wait at the gate beside the cycles' own. */
const GATE_SHARERS = 5;

/**
 * Database connections of one replica. A cycle holds a connection only for its statements (a few ms),
 * never across a call to the service, so a burst needs far fewer connections than cycles in flight; the
 * ceiling keeps three replicas at defaults well inside PostgreSQL's default `max_connections` (100). The
 * extra four are for maintenance, tracking and the ops endpoints.
 */
export function databasePoolSize(cycles: number): number {
  return Math.max(10, Math.min(cycles, 20) + 4);
}
