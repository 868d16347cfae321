import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { DEMO_TOKEN, type RunningSandbox, startSandbox } from '../../src/sandbox/index.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { type RunningCommand, replicaEnvironment, startCommand } from '../support/worker-process.js';

const onPostgres = inject('treasuryDatabase').backend === 'postgres';
if (!onPostgres) {
  process.stderr.write(
    '\n!!! replicas.test.ts SKIPPED: several worker processes need a PostgreSQL server\n\n',
  );
}

const STRATEGIES = ['a', 'b', 'c']
  .map(
    (name) => `name: every-second-${name}
kind: dca
symbol: USDTBRL
amount: "100.00"
schedule: "* * * * * *"
timezone: UTC
`,
  )
  .join('---\n');

const SETTINGS = `engine:
  catchUpIntervalMs: 1000
  reconcile:
    intervalMs: 2000
  reload:
    watch: false
`;

/** Invariant 1 across replicas: three `run` processes on one database and one schedule. */
describe.skipIf(!onPostgres)('three replicas on one database', () => {
  let sandbox: RunningSandbox;
  let test: TestDatabase;
  let workers: RunningCommand[] = [];

  beforeAll(async () => {
    sandbox = await startSandbox({ stepMs: 0 });
    test = await createTestDatabase('postgres');
  });
  afterAll(async () => {
    for (const worker of workers) worker.child.kill('SIGKILL');
    await sandbox.close();
    await test.drop();
  });

  it('places exactly one order per slot at the service, every one recorded, over 20+ slots', async () => {
    const env = await replicaEnvironment({
      strategiesYaml: STRATEGIES,
      settingsYaml: SETTINGS,
      databaseUrl: test.url!,
      apiUrl: sandbox.url,
      apiToken: DEMO_TOKEN,
    });
    workers = [0, 1, 2].map(() => startCommand(['run'], env));
    await Promise.all(workers.map((worker) => worker.waitForLine('worker started')));

    // Three strategies every second: wait until more than 20 slots were bought, with all three running.
    const enough = 24;
    for (;;) {
      const placed = (await test.database.cycles.listRecent({ limit: 500 })).filter(
        (c) => c.state === 'placed',
      );
      if (placed.length >= enough) break;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    for (const worker of workers) worker.child.kill('SIGTERM');
    const exits = await Promise.all(workers.map((worker) => worker.exited));
    expect(exits.map((exit) => exit.code)).toEqual([0, 0, 0]);

    const cycles = await test.database.cycles.listRecent({ limit: 1_000 });
    const placed = cycles.filter((cycle) => cycle.state === 'placed');
    const ledger = sandbox.ledger();
    expect(placed.length).toBeGreaterThanOrEqual(enough);
    // One order per slot: as many orders at the service as placed cycles, each the order of its cycle.
    expect(ledger).toHaveLength(placed.length);
    expect(new Set(placed.map((cycle) => cycle.serviceOrderId))).toEqual(
      new Set(ledger.map((order) => order.id)),
    );
    for (const order of ledger) {
      const recorded = await test.database.orders.getByServiceId(order.id);
      expect(recorded?.cycleId).not.toBeNull();
      expect(recorded?.quoteId).toBe(order.quoteId);
    }
    expect(
      cycles.filter((cycle) => ['unsure', 'submitting', 'claimed', 'quoted'].includes(cycle.state)),
    ).toEqual([]);
    // The slots really were contended: more than one replica won some.
    expect(new Set(placed.map((cycle) => cycle.owner)).size).toBeGreaterThan(1);
  }, 60_000);
});
