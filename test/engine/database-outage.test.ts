import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { type Database, openDatabase } from '../../src/db/index.js';
import { createApiObserver, createReadiness, recoverAbandonedCycles } from '../../src/engine/index.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.js';
import { type EngineBench, metricValue, startEngineBench, strategy } from './support/harness.js';

const onPostgres = inject('treasuryDatabase').backend === 'postgres';
if (!onPostgres) {
  process.stderr.write(
    '\n!!! database-outage.test.ts SKIPPED: it cuts a TCP connection and needs a PostgreSQL server\n\n',
  );
}

/** Invariant 2: no order without a committed intent; the worker recovers on its own when the database returns. */
describe.skipIf(!onPostgres)('database outage during a cycle', () => {
  let test: TestDatabase;
  let proxy: TcpProxy;
  let proxied: Database;
  let bench: EngineBench;

  beforeAll(async () => {
    test = await createTestDatabase('postgres');
    const direct = new URL(test.url!);
    proxy = await startTcpProxy({ host: direct.hostname, port: Number(direct.port || 5432) });
    proxied = await openDatabase({ url: proxy.rewrite(test.url!), maxConnections: 3 });
    bench = await startEngineBench({
      test: { ...test, database: proxied },
      engine: { databaseTimeoutMs: 1_000 },
    });
  });
  afterAll(async () => {
    await bench.close();
    await proxied.close();
    await proxy.close();
    await test.drop();
  });

  it('sends no order when the intent cannot be committed, shows the outage, and recovers after', async () => {
    const outage = strategy({ name: 'outage' });
    const placedBefore = await bench.run(outage);
    expect(placedBefore.outcome).toBe('placed');
    const ordersBefore = bench.sandbox.ledger().length;

    // The database goes away the moment the quote arrives: between the quote and the intent.
    bench.onRequest = (event) => {
      if (event.operation === 'getQuote') proxy.cut();
    };
    const report = await bench.run(outage);
    bench.onRequest = undefined;

    expect(report).toMatchObject({ outcome: 'failed', reason: 'database_unavailable', orderId: null });
    expect(report.quoteId).toBeNull();
    expect(bench.sandbox.ledger().length).toBe(ordersBefore);
    expect(
      await metricValue(bench.metrics, 'treasury_database_errors_total', {
        operation: 'cycle_commit_intent',
      }),
    ).toBeGreaterThanOrEqual(1);
    expect(bench.lines.some((line) => line.errorCode === 'DB_UNAVAILABLE' && line.outcome === 'failed')).toBe(
      true,
    );

    const readiness = createReadiness({
      database: proxied,
      accounts: bench.context.accounts,
      observer: createApiObserver(bench.metrics),
      killSwitch: bench.context.killSwitch,
      clock: () => new Date(),
      metrics: bench.metrics,
      settings: { databaseTimeoutMs: 2_000, databaseClockSkewMs: 2_000 },
    });
    await readiness.refresh();
    const down = readiness.report();
    expect(down.ready).toBe(false);
    // Refused, or no answer within the probe's 2 s (the driver waiting to reconnect): not ready either way.
    expect(down.checks.database!.ok).toBe(false);
    expect(['DB_UNAVAILABLE', 'DB_TIMEOUT']).toContain(down.checks.database!.detail);

    proxy.restore();
    await readiness.refresh();
    expect(readiness.report().checks.database!.ok).toBe(true);
    // The cycle the outage interrupted sent nothing: it ends failed, either by its own late write (the
    // statement the engine gave up on may still land once the database is back) or by recovery.
    const later = new Date(Date.now() + bench.context.settings.recovery.abandonAfterMs + 1_000);
    await recoverAbandonedCycles(bench.context, later);
    const interrupted = await test.database.cycles.getBySlot('outage', new Date(report.slot));
    expect(interrupted!.state).toBe('failed');
    expect(['database_unavailable', 'abandoned']).toContain(interrupted!.reasonCode);

    const after = await bench.run(outage);
    expect(after.outcome).toBe('placed');
    expect(bench.sandbox.ledger().length).toBe(ordersBefore + 1);
  });
});
