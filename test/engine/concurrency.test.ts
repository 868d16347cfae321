import { afterEach, describe, expect, it, vi } from 'vitest';
import { createServiceGate } from '../../src/api/index.js';
import { createAdaptiveLimit, createLimiter, cycleConcurrency, judgeCycle } from '../../src/engine/index.js';
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

  it('keeps the configured cap without a pace of our own', () => {
    const engine = engineSettings();
    expect(cycleConcurrency(engine)).toBe(engine.concurrency);
    expect(engine.concurrency).toBeGreaterThanOrEqual(64);
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

describe('the adaptive limit of cycles in flight', () => {
  it('grows by one per quick cycle up to the cap, halves once per round on a slow one, then grows by one per round', () => {
    let now = 0;
    const limit = createAdaptiveLimit({ initial: 8, max: 64, now: () => now });
    for (let i = 0; i < 100; i++) limit.observe(now, 'ok');
    expect(limit.current).toBe(64);
    limit.observe(now, 'ignore');
    expect(limit.current).toBe(64);

    now = 10;
    limit.observe(5, 'slow');
    expect(limit.current).toBe(32);
    // Cycles that started before the decrease were already in flight: they cannot halve it again.
    limit.observe(9, 'slow');
    limit.observe(10, 'slow');
    expect(limit.current).toBe(32);
    now = 20;
    limit.observe(11, 'slow');
    expect(limit.current).toBe(16);
    // After a slowdown: one more per round of 16 quick cycles, not one per cycle.
    for (let i = 0; i < 16; i++) limit.observe(now, 'ok');
    expect(limit.current).toBe(17);
    for (let round = 0; round < 20; round++) {
      now += 10;
      limit.observe(now - 1, 'slow');
    }
    expect(limit.current).toBe(1);
  });

  it('starts queued cycles as soon as the limit grows, and none while it is below the cycles in flight', async () => {
    let now = 0;
    const limit = createAdaptiveLimit({ initial: 2, max: 4, now: () => now });
    const limiter = createLimiter(limit);
    const releases: (() => void)[] = [];
    const task = () => limiter.run(() => new Promise<void>((resolve) => releases.push(resolve)));
    const tasks = Array.from({ length: 8 }, task);
    const flush = () => new Promise((resolve) => setImmediate(resolve));
    await flush();
    expect(limiter.active).toBe(2);
    limit.observe(now, 'ok');
    limit.observe(now, 'ok');
    releases.shift()!();
    await flush();
    // One finished, the limit is now 4: three more started.
    expect(limiter.active).toBe(4);
    now = 1;
    limit.observe(0, 'slow');
    expect(limit.current).toBe(2);
    releases.shift()!();
    releases.shift()!();
    await flush();
    // Two finished out of four, the limit is 2: none started.
    expect(limiter.active).toBe(2);
    while (releases.length > 0) {
      releases.shift()!();
      await flush();
    }
    await Promise.all(tasks);
    await limiter.idle();
  });

  it('judges a cycle by its quote to order step: slow past a quarter of the usable window or when its quote was lost, silent without an order', () => {
    const engine = { quoteWindowMs: 5_000, deadlineMarginMs: 1_000 };
    const placed = { reason: 'ok' };
    expect(judgeCycle(placed, 999, engine)).toBe('ok');
    expect(judgeCycle(placed, 1_001, engine)).toBe('slow');
    expect(judgeCycle({ reason: 'quote_expired' }, 100, engine)).toBe('slow');
    expect(judgeCycle({ reason: 'quote_deadline_exceeded' }, undefined, engine)).toBe('slow');
    expect(judgeCycle({ reason: 'slot_already_claimed' }, undefined, engine)).toBe('ignore');
  });
});
