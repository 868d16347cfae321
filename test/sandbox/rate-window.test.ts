import { describe, expect, it } from 'vitest';
import { FaultInjector } from '../../src/sandbox/faults.js';
import { createRng } from '../../src/sandbox/market.js';

/**
 * The sandbox's `rateLimit` fault: requests per second above which it answers 429. The second is the one
 * before each request, not the calendar second, so two requests a few milliseconds apart are two requests in
 * one second whatever the clock reads (the rate-limit tests of the client failed when theirs straddled a
 * second boundary), and a request that was refused does not use up the next second's room.
 */
describe('sandbox rate limit window', () => {
  function injector(limit: number) {
    let now = 0;
    const faults = new FaultInjector(
      createRng(1),
      { quote: { rateLimit: limit, retryAfterSeconds: 1 } },
      () => now,
    );
    return {
      at(ms: number) {
        now = ms;
        return faults.plan('quote').rateLimitedRetryAfter;
      },
    };
  }

  it('counts the requests of the last second across a calendar second boundary', () => {
    const sandbox = injector(1);
    expect(sandbox.at(999)).toBeNull();
    expect(sandbox.at(1_001)).toBe('1');
  });

  it('lets a request through once the accepted one is a second old; refused requests do not count', () => {
    const sandbox = injector(1);
    expect(sandbox.at(10_000)).toBeNull();
    expect(sandbox.at(10_010)).toBe('1');
    expect(sandbox.at(10_500)).toBe('1');
    expect(sandbox.at(11_001)).toBeNull();
  });

  it('answers an HTTP date at least Retry-After seconds away, rounded up to the whole second', () => {
    let now = 0;
    const faults = new FaultInjector(
      createRng(1),
      { quote: { rateLimit: 0, retryAfter: 'date', retryAfterSeconds: 2 } },
      () => now,
    );
    now = 5_400;
    const date = faults.plan('quote').rateLimitedRetryAfter;
    expect(date).toBe(new Date(8_000).toUTCString());
  });
});
