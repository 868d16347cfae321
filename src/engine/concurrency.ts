import type { PurchaseClient } from '../api/index.js';

/**
 * Bounded concurrency for cycles. A burst of strategies due at the same instant queues here, before any
 * quote is requested, so a cycle holds its place from claim to recorded outcome and its quote never waits
 * behind other cycles' work. The bound is fixed, or adaptive (AdaptiveLimit, below).
 */
export interface Limiter {
  run<T>(task: () => Promise<T>): Promise<T>;
  readonly active: number;
  readonly queued: number;
  /** Resolves once nothing is running or queued. */
  idle(): Promise<void>;
}

export function createLimiter(limit: number | AdaptiveLimit): Limiter {
  if (typeof limit === 'number' && (!Number.isInteger(limit) || limit < 1))
    throw new RangeError(`limit must be a positive integer`);
  const bound = typeof limit === 'number' ? () => limit : () => limit.current;
  let active = 0;
  const waiting: (() => void)[] = [];
  let idleWaiters: (() => void)[] = [];

  // First come, first served: a newcomer never slips in ahead of a waiter.
  const acquire = (): Promise<void> | undefined => {
    if (waiting.length === 0 && active < bound()) {
      active++;
      return undefined;
    }
    return new Promise((resolve) => waiting.push(resolve));
  };

  // As many waiters start as the bound allows now: none when it shrank, several when it grew.
  const release = () => {
    active--;
    while (waiting.length > 0 && active < bound()) {
      active++;
      waiting.shift()!();
    }
    if (active === 0 && waiting.length === 0) {
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
 * How many cycles may be in flight, learnt from the cycles themselves (additive increase, multiplicative
 * decrease, as TCP paces a connection): while cycles that quoted finish well within their quote's window,
 * the bound grows, by one per cycle until the first slowdown and by one per round of cycles after it, up to
 * the cap; a cycle that took more than the target, or lost its quote, halves it. So a burst runs as wide as
 * the service's round trips allow when the machine and the database keep up, and narrows, instead of
 * letting quotes expire, when they do not. One halving per round: cycles that started before a decrease
 * cannot cause another.
 */
export interface AdaptiveLimit {
  readonly current: number;
  /** A cycle that started at `startedAt` (performance.now()) ended; `ignore` for cycles that never quoted. */
  observe(startedAt: number, verdict: CycleVerdict): void;
}

export type CycleVerdict = 'ok' | 'slow' | 'ignore';

export function createAdaptiveLimit(options: {
  initial: number;
  /** The cap, fixed or read at each use (it follows the pace the replica learnt at the service). */
  max: number | (() => number);
  now?: () => number;
}): AdaptiveLimit {
  const now = options.now ?? (() => performance.now());
  const max = typeof options.max === 'number' ? () => options.max as number : options.max;
  let limit = Math.max(1, Math.min(options.initial, max()));
  let slowStart = true;
  let lastDecrease = Number.NEGATIVE_INFINITY;
  return {
    get current() {
      return Math.max(1, Math.floor(Math.min(limit, max())));
    },
    observe(startedAt, verdict) {
      if (verdict === 'ignore') return;
      if (verdict === 'slow') {
        if (startedAt <= lastDecrease) return;
        lastDecrease = now();
        slowStart = false;
        limit = Math.max(1, Math.floor(limit / 2));
        return;
      }
      limit = Math.min(max(), limit + (slowStart ? 1 : 1 / Math.floor(limit)));
    },
  };
}

/**
 * The verdict on a finished cycle: slow when an order left more than a quarter of its quote's usable window
 * after the quote arrived, or the cycle gave up on a quote; ignored when no order left (a slot another
 * replica claimed, a skip: they say nothing about the quote window). Only the quote to order step counts:
 * time before the quote (claim, reads, a queue at the database) costs no quote.
 */
export function judgeCycle(
  report: { reason: string },
  quoteToOrderMs: number | undefined,
  engine: { quoteWindowMs: number; deadlineMarginMs: number },
): CycleVerdict {
  if (report.reason === 'quote_expired' || report.reason === 'quote_deadline_exceeded') return 'slow';
  if (quoteToOrderMs === undefined) return 'ignore';
  return quoteToOrderMs > (engine.quoteWindowMs - engine.deadlineMarginMs) / 4 ? 'slow' : 'ok';
}

/**
 * One cycle's trading client, watched: the longest time from a quote's answer to the departure of the order
 * that uses it (the cycle's own figure, whatever the other cycles in flight do).
 */
export function watchQuoteToOrder(client: PurchaseClient): {
  client: PurchaseClient;
  longestMs(): number | undefined;
} {
  const answeredAt = new Map<string, number>();
  let longest: number | undefined;
  return {
    client: {
      ...client,
      async getQuote(input, options) {
        const quote = await client.getQuote(input, options);
        answeredAt.set(quote.quoteId, performance.now());
        return quote;
      },
      createOrder(input, options) {
        const at = answeredAt.get(input.quoteId);
        if (at !== undefined) longest = Math.max(longest ?? 0, performance.now() - at);
        return client.createOrder(input, options);
      },
    },
    longestMs: () => longest,
  };
}

/**
 * Cycles one replica runs at once. A burst is bounded by the service, not by us: the cap is high (the
 * cycles' time is mostly spent waiting on the service), and each cycle holds its place from claim to
 * recorded outcome, so its quote and its order stay together. Under a pace (`api.rateLimit`, or the one the
 * gate learnt from the service's 429s), every request waits its turn at one first-come gate where at most
 * one request of each cycle in flight (and a few of tracking and maintenance) can queue; the cap is then
 * lowered so that an order's wait there, (cycles in flight) / rate, stays within half of its quote's usable
 * window.
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
