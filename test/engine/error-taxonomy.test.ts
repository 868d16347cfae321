import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withDatabase } from '../../src/engine/engine-errors.js';
import { EngineError } from '../../src/engine/index.js';
import { errorCodeOf } from '../../src/errors.js';
import { createMetrics, type Metrics } from '../../src/observability/metrics.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { metricValue } from './support/harness.js';

/** One classifier for a failed database call: an outage, a refused statement, or a bug in our code. */
describe('database failures as the engine reports them', () => {
  let test: TestDatabase;
  let metrics: Metrics;
  const context = () => ({ metrics, settings: { databaseTimeoutMs: 5_000 } });

  beforeAll(async () => {
    test = await createTestDatabase();
    metrics = createMetrics({ defaultMetrics: false });
  });
  afterAll(() => test.drop());

  it('reports a programming error inside a repository call as a bug, not as the database being down', async () => {
    const failure = await withDatabase(context(), 'cycle_get', async () => {
      const cycle = await test.database.cycles.get(-1);
      // The bug: a missing row taken for granted.
      return cycle!.id;
    }).catch((error: unknown) => error);

    expect(failure).toBeInstanceOf(TypeError);
    expect(errorCodeOf(failure)).toBe('INTERNAL');
    expect(await metricValue(metrics, 'treasury_internal_errors_total', { where: 'cycle_get' })).toBe(1);
    expect(await metricValue(metrics, 'treasury_database_errors_total', { operation: 'cycle_get' })).toBe(0);
  });

  it('reports a statement the server refused as DB_ERROR, with the driver error as cause', async () => {
    // No such strategy: the foreign key refuses the claim (SQLSTATE 23503).
    const failure = await withDatabase(context(), 'claim_slot', () =>
      test.database.cycles.claimSlot({
        strategy: 'nobody',
        account: 'default',
        slot: new Date(),
        trigger: 'once',
        owner: 'r1',
      }),
    ).catch((error: unknown) => error);

    expect(failure).toBeInstanceOf(EngineError);
    expect(errorCodeOf(failure)).toBe('DB_ERROR');
    expect(await metricValue(metrics, 'treasury_database_errors_total', { operation: 'claim_slot' })).toBe(1);
  });

  it('reports a call cut by our own time limit as DB_TIMEOUT (outcome unknown), never as an outage', async () => {
    const silent = new Promise<never>(() => {});
    const failure = await withDatabase(context(), 'silent', () => silent, 20).catch(
      (error: unknown) => error,
    );
    expect(errorCodeOf(failure)).toBe('DB_TIMEOUT');
    expect(await metricValue(metrics, 'treasury_database_timeouts_total', { operation: 'silent' })).toBe(1);
    expect(await metricValue(metrics, 'treasury_database_errors_total', { operation: 'silent' })).toBe(0);
  });
});
