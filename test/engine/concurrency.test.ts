import { afterEach, describe, expect, it, vi } from 'vitest';
import { createServiceGate } from '../../src/api/index.js';
import { createLimiter, cycleConcurrency, databasePoolSize } from '../../src/engine/index.js';
import { engineSettings } from './support/harness.js';

describe('bounded concurrency', () => {
  it('never runs more than the limit, runs everything, in arrival order, and reports idle', async () => {
    const limiter = createLimiter(3);
    let running = 0;
    let peak = 0;
    const started: number[] = [];
    const releases: (() => void)[] = [];
    const tasks = Array.from({ length: 10 }, (_, index) =>
      limiter.run(async () => {
        started.push(index);
        running++;
        peak = Math.max(peak, running);
        await new Promise<void>((resolve) => releases.push(resolve));
        running--;
        return index;
      }),
    );
    const idle = limiter.idle();
    // Release one task at a time: each release lets exactly one queued task start.
    for (let released = 0; released < 10; released++) {
      await new Promise((resolve) => setImmediate(resolve));
      expect(limiter.active).toBeLessThanOrEqual(3);
      releases.shift()!();
    }
    expect(await Promise.all(tasks)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    await idle;
    expect(peak).toBe(3);
    expect(started).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(limiter.active).toBe(0);
  });

  it('frees the slot when a task throws', async () => {
    const limiter = createLimiter(1);
    await expect(limiter.run(async () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    expect(await limiter.run(async () => 'next')).toBe('next');
  });
});

describe('sizing the cycles in flight', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('keeps the configured cap without a pace of our own, and a database pool that stays small', () => {
    const engine = engineSettings();
    expect(cycleConcurrency(engine)).toBe(engine.concurrency);
    expect(engine.concurrency).toBeGreaterThanOrEqual(64);
    expect(databasePoolSize(64)).toBe(24);
    expect(databasePoolSize(2)).toBe(10);
    // Three replicas at defaults fit PostgreSQL's default max_connections (100) with room for others.
    expect(3 * databasePoolSize(engine.concurrency)).toBeLessThanOrEqual(75);
  });

  it('under a pace, every cycle in flight queued at the gate still lets an order leave within half its quote window', async () => {
    vi.useFakeTimers({ now: 0 });
    const engine = engineSettings({ concurrency: 1_000 });
    const usableMs = engine.quoteWindowMs - engine.deadlineMarginMs;
    for (const rate of [2, 10, 25, 100]) {
      const cycles = cycleConcurrency(engine, rate);
      expect(cycles).toBeGreaterThanOrEqual(1);
      const gate = createServiceGate({ ratePerSecond: rate, now: () => Date.now() });
      // The worst moment: one request of every other cycle in flight and of every other client queued first.
      const queued = Array.from({ length: cycles - 1 + 5 }, () => gate.admit('getQuote'));
      const sentAt = Date.now();
      let orderLeftAt = Number.NaN;
      const order = gate.admit('createOrder').then(() => {
        orderLeftAt = Date.now();
      });
      await vi.runAllTimersAsync();
      await Promise.all([...queued, order]);
      if (rate >= 10) expect(orderLeftAt - sentAt).toBeLessThanOrEqual(usableMs / 2);
      expect(orderLeftAt - sentAt).toBeLessThan(usableMs);
      vi.setSystemTime(Date.now() + 60_000);
    }
  });
});
