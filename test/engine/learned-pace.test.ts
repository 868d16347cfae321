import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readStatus } from '../../src/control/index.js';
import { EVERY_ACCOUNT } from '../../src/db/index.js';
import { createLiveness, Worker } from '../../src/engine/index.js';
import { type EngineBench, metricValue, startEngineBench } from './support/harness.js';

/**
 * Issue 32, item 4: without TREASURY_API_RATE_LIMIT, a service that throttles at 5 requests a second turned
 * 4 to 8 of a burst of 20 cycles into `rate_limited` or `quote_deadline_exceeded`. After its first 429 the
 * replica paces itself at the rate the service accepts, so the same burst places every order.
 */
describe('a replica with no configured rate against a service that throttles', () => {
  const STRATEGIES = 20;
  let bench: EngineBench;
  let folder: string;

  beforeAll(async () => {
    bench = await startEngineBench({ gate: {} });
    folder = await mkdtemp(join(tmpdir(), 'tb-pace-'));
    // Due at the same slot; the schedule never fires by itself (the test dispatches the slot).
    const documents = Array.from(
      { length: STRATEGIES },
      (_, index) =>
        `name: burst-${index}\nkind: dca\nsymbol: USDTBRL\namount: "100.00"\nschedule: "0 0 1 1 *"\ntimezone: UTC\n`,
    );
    await writeFile(join(folder, 'burst.yaml'), documents.join('---\n'));
  });
  afterAll(async () => {
    await bench.close();
    await rm(folder, { recursive: true, force: true });
  });

  it('places every order of a burst of 20 against 5 requests a second, and shows the pace it learnt', async () => {
    const worker = new Worker(bench.context, { strategiesPath: folder, useCron: false });
    const slot = new Date('2032-06-01T12:00:00Z');
    try {
      await worker.start();
      bench.sandbox.setFaults({ '*': { rateLimit: 5, retryAfterSeconds: 1 } });
      for (const strategy of worker.strategies) worker.scheduler.dispatch(strategy, slot, 'schedule');
      await worker.scheduler.settled();
    } finally {
      await worker.stop();
      bench.sandbox.setFaults({});
    }

    const cycles = await bench.database.cycles.listRecent(EVERY_ACCOUNT, { limit: 100 });
    const burst = cycles.filter((cycle) => cycle.slot.getTime() === slot.getTime());
    expect(burst).toHaveLength(STRATEGIES);
    const outcomes = burst.map((cycle) => `${cycle.state}/${cycle.reasonCode ?? ''}`);
    expect(outcomes.filter((outcome) => !outcome.startsWith('placed'))).toEqual([]);

    const pace = await metricValue(bench.metrics, 'treasury_api_pace_requests_per_second');
    expect(pace).toBeGreaterThan(0);
    expect(pace).toBeLessThanOrEqual(5);
    // `status` reads the database: the replica's heartbeat carries the pace.
    const liveness = createLiveness(bench.context);
    await liveness.beat();
    const status = await readStatus(bench.database, EVERY_ACCOUNT, 1, new Date());
    expect(status.replicas.map((replica) => [replica.id, replica.apiPace])).toEqual([['test-replica', pace]]);
  });
});
