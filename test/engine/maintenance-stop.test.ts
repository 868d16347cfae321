import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPurchaseClient, type PurchaseClient } from '../../src/api/index.js';
import { type EngineContext, Maintenance } from '../../src/engine/index.js';
import { DEMO_TOKEN } from '../../src/sandbox/index.js';
import { type EngineBench, onClient, startEngineBench } from './support/harness.js';
import { startListingService } from './support/listing-service.js';
import { recordUnsureCycle } from './support/unsure-cycle.js';

/**
 * A maintenance pass waits on the service (the order list, order details). stop() must not wait out the
 * client's timeouts and retries against a service that takes the request and never answers.
 */
describe('stopping maintenance while the service does not answer', () => {
  let bench: EngineBench;
  let service: Awaited<ReturnType<typeof startListingService>>;
  let client: PurchaseClient;
  let context: EngineContext;
  beforeAll(async () => {
    bench = await startEngineBench();
    service = await startListingService([], { silentList: true });
    // Unaborted, each list request would hold the pass for 2 s × 2 attempts.
    client = createPurchaseClient({
      baseUrl: service.url,
      token: DEMO_TOKEN,
      timeouts: { headersMs: 2_000 },
      retry: { maxAttempts: 2, baseDelayMs: 5, maxDelayMs: 5 },
    });
    context = onClient(bench.context, client);
  });
  afterAll(async () => {
    await client.close();
    await service.close();
    await bench.close();
  });

  /** Starts a pass, waits until its order-list request is at the service, stops; returns how long stop took. */
  async function stopDuringListRequest(maintenance: Maintenance) {
    const linesBefore = bench.lines.length;
    const asked = service.nextListRequest();
    const pass = maintenance.runOnce();
    await asked;
    const began = performance.now();
    await maintenance.stop();
    const stopMs = performance.now() - began;
    const warnings = bench.lines
      .slice(linesBefore)
      .filter((line) => line.level !== 'info' && line.level !== 'debug');
    return { stopMs, report: await pass, warnings };
  }

  it('aborts a reconciliation waiting on the order list, and does not count it as a failure', async () => {
    const cycle = await recordUnsureCycle(bench, {
      name: 'silent-service',
      slot: new Date('2034-01-01T00:00:00Z'),
      quoteId: 'SILENT001',
    });
    const { stopMs, report, warnings } = await stopDuringListRequest(new Maintenance(context));

    expect(stopMs).toBeLessThan(1_000);
    expect(report).toMatchObject({ stopped: true, errors: [] });
    expect(report.external?.get('default')).toBeUndefined();
    expect(warnings).toEqual([]);
    expect(await bench.database.cycles.get(cycle.id)).toMatchObject({ state: 'unsure' });
  });

  it('aborts the external-order scan waiting on the order list', async () => {
    // No unsure cycle to lease (the one above is leased for a minute): the pass goes on to the scan.
    const { stopMs, report, warnings } = await stopDuringListRequest(new Maintenance(context));

    expect(stopMs).toBeLessThan(1_000);
    expect(report).toMatchObject({ stopped: true, errors: [], reconcile: { examined: 0 } });
    expect(warnings).toEqual([]);
  });
});
