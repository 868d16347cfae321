import { describe, expect, it } from 'vitest';
import { createLimiter } from '../../src/engine/index.js';

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
