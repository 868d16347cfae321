import { setTimeout as delay } from 'node:timers/promises';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { createTracker } from '../../src/tracking/index.js';
import { type Bench, startBench } from './support/harness.js';

const onPostgres = inject('treasuryDatabase').backend === 'postgres';
if (!onPostgres) {
  process.stderr.write(
    '\n!!! tracking/database-timeout.test.ts SKIPPED: it holds a lock from a second connection and needs a PostgreSQL server\n\n',
  );
}

/**
 * A statement the database never answers (here: queued behind a lock another session holds; in production
 * a half-open connection) must not hold tracking, and with it the worker's stop, for as long as it waits.
 */
describe.skipIf(!onPostgres)('tracking against a database that does not answer', () => {
  let bench: Bench;
  let admin: postgres.Sql;
  beforeAll(async () => {
    bench = await startBench();
    admin = postgres(bench.test.url!, { max: 2, onnotice: () => {} });
  });
  afterAll(async () => {
    await admin.end({ timeout: 1 });
    await bench.close();
  });

  it('gives up on a statement after engine.databaseTimeoutMs, so the tracker stops', async () => {
    await bench.placeOrder();
    const locker = await admin.reserve();
    await locker`begin`;
    await locker`lock table orders in access exclusive mode`;
    const tracker = createTracker({
      ...bench,
      databaseTimeoutMs: 300,
      settings: bench.settings({ poll: { intervalMs: 5 } }),
    });
    try {
      tracker.start();
      // The poll's claim is queued behind the lock.
      await vi.waitFor(
        async () => {
          const [row] = await admin`
            select count(*)::int as waiting from pg_stat_activity
            where datname = current_database() and wait_event_type = 'Lock'`;
          expect(row!.waiting).toBeGreaterThan(0);
        },
        { timeout: 5_000, interval: 20 },
      );

      const began = performance.now();
      // A deadline, not a wait for an event: a stop that never comes must fail the test, not hang it.
      const outcome = await Promise.race([
        tracker.stop().then(() => 'stopped' as const),
        delay(5_000, 'still waiting on the database' as const),
      ]);
      expect(outcome).toBe('stopped');
      expect(performance.now() - began).toBeLessThan(2_000);
      // Given up on by our own limit: counted as a timeout (outcome unknown), not as an outage.
      const cut = await bench.metrics.databaseTimeouts.get();
      expect(cut.values.some((value) => value.labels.operation === 'tracking_claim')).toBe(true);
      const failed = await bench.metrics.databaseErrors.get();
      expect(failed.values.some((value) => value.labels.operation === 'tracking_claim')).toBe(false);
    } finally {
      await locker`rollback`;
      locker.release();
      await tracker.stop();
    }
  });
});
