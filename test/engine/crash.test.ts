import { randomInt } from 'node:crypto';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, inject, it, onTestFailed } from 'vitest';
import { createPurchaseClient } from '../../src/api/index.js';
import { engineSchema } from '../../src/config/index.js';
import { EVERY_ACCOUNT } from '../../src/db/index.js';
import { type EngineContext, KillSwitch, Maintenance } from '../../src/engine/index.js';
import { createLogger } from '../../src/observability/logger.js';
import { createMetrics } from '../../src/observability/metrics.js';
import { DEMO_TOKEN, type RunningSandbox, startSandbox } from '../../src/sandbox/index.js';
import { createRng } from '../../src/sandbox/market.js';
import { DEFAULT_ACCOUNT, DEFAULT_QUOTE_TOLERANCES } from '../../src/strategy/index.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { type RunningCommand, replicaEnvironment, startCommand } from '../support/worker-process.js';

const onPostgres = inject('treasuryDatabase').backend === 'postgres';
if (!onPostgres) {
  process.stderr.write(
    '\n!!! crash.test.ts SKIPPED: worker processes sharing a database need a PostgreSQL server\n\n',
  );
}

/**
 * The kill points (when, and which replica) come from one seed, fresh per run unless given, and printed
 * when the test fails. Replay a failure with `TREASURY_CRASH_SEED=<seed> npx vitest run test/engine/crash.test.ts`.
 * The sandbox's dropped order answers have their own fixed seed, so that every run has some to reconcile.
 */
const SEED = crashSeed(process.env.TREASURY_CRASH_SEED);
const KILLS = 8;
const REPLICAS = 2;

const STRATEGIES = `name: crash-every-second
kind: dca
symbol: USDTBRL
amount: "100.00"
schedule: "* * * * * *"
timezone: UTC
`;

const ENGINE = {
  orderTimeoutMs: 1_500,
  catchUpIntervalMs: 1_000,
  recovery: { submittingMarginMs: 1_000, abandonAfterMs: 4_000 },
  reconcile: { intervalMs: 1_000, visibilityLagMs: 1_000, leaseMs: 2_000 },
  reload: { watch: false },
};

const SETTINGS = `engine:
  orderTimeoutMs: ${ENGINE.orderTimeoutMs}
  catchUpIntervalMs: ${ENGINE.catchUpIntervalMs}
  recovery:
    submittingMarginMs: ${ENGINE.recovery.submittingMarginMs}
    abandonAfterMs: ${ENGINE.recovery.abandonAfterMs}
  reconcile:
    intervalMs: ${ENGINE.reconcile.intervalMs}
    visibilityLagMs: ${ENGINE.reconcile.visibilityLagMs}
    leaseMs: ${ENGINE.reconcile.leaseMs}
  reload:
    watch: false
`;

/**
 * Invariants 1, 3 and 4 under crashes: two replicas killed with SIGKILL at random points and restarted,
 * while the service drops order answers after accepting them and answers slowly. After a reconciliation
 * pass: no duplicate order, every order at the service recorded with its cycle, no cycle left unsure.
 */
describe.skipIf(!onPostgres)('kill -9 while orders are in flight', () => {
  let sandbox: RunningSandbox;
  let test: TestDatabase;
  const workers: RunningCommand[] = [];

  beforeAll(async () => {
    sandbox = await startSandbox({
      stepMs: 0,
      seed: 7,
      faults: { createOrder: { acceptThenDropRate: 0.3, latencyMs: 300 }, quote: { latencyMs: 50 } },
    });
    test = await createTestDatabase('postgres');
  });
  afterAll(async () => {
    for (const worker of workers) worker.child.kill('SIGKILL');
    await sandbox.close();
    await test.drop();
  });

  it('leaves no duplicate, no unrecorded order and no unsure cycle after restart and reconciliation', async () => {
    const random = createRng(SEED);
    const plan = Array.from({ length: KILLS }, () => ({
      afterMs: random.nextInt(800, 1_600),
      /** Index into the live replicas, oldest first. */
      victim: random.nextInt(0, REPLICAS - 1),
    }));
    const starts: number[] = [];
    onTestFailed(() => {
      process.stderr.write(
        `\ncrash.test.ts failed with seed ${SEED} (kills: ${plan.map((kill) => `${kill.afterMs} ms → replica ${kill.victim}`).join(', ')}; replacements started in ${starts.join(', ')} ms);` +
          ` replay with TREASURY_CRASH_SEED=${SEED}\n\n`,
      );
    });
    const env = await replicaEnvironment({
      strategiesYaml: STRATEGIES,
      settingsYaml: SETTINGS,
      databaseUrl: test.url!,
      apiUrl: sandbox.url,
      apiToken: DEMO_TOKEN,
    });
    const live: RunningCommand[] = [];
    const launch = () => {
      const worker = startCommand(['run'], env);
      workers.push(worker);
      live.push(worker);
      return worker;
    };
    await Promise.all(
      Array.from({ length: REPLICAS }, launch).map((worker) => worker.waitForLine('worker started')),
    );

    // The kill points are moments, not events: waiting out a seeded delay is the point here.
    for (const kill of plan) {
      await new Promise((resolve) => setTimeout(resolve, kill.afterMs));
      const victim = live.splice(kill.victim, 1)[0]!;
      victim.child.kill('SIGKILL');
      expect((await victim.exited).signal).toBe('SIGKILL');
      // The next kill counts from the replacement's start: on a loaded machine a start can outlast the
      // interval between kills, and replicas killed while still starting leave no order in flight to be
      // killed over (CI's Node 24 pass, on two cores shared with other test files, saw 2 orders in 8 kills;
      // a start took 2.3 s on an idle machine here and 10 s beside two other replica tests).
      const starting = performance.now();
      await launch().waitForLine('worker started');
      starts.push(Math.round(performance.now() - starting));
    }
    for (const worker of live) worker.child.kill('SIGTERM');
    await Promise.all(live.map((worker) => worker.exited));

    // The reconciliation a restarted worker runs, here in-process with the clock past every threshold.
    const context = reconcilerContext(test, sandbox.url, new Date(Date.now() + 60_000));
    for (let pass = 0; pass < 2; pass++)
      expect((await new Maintenance(context).runOnce()).errors).toEqual([]);
    for (const { client } of context.accounts.values()) await client.close();

    const cycles = await test.database.cycles.listRecent(EVERY_ACCOUNT, { limit: 2_000 });
    const ledger = sandbox.ledger();
    expect(ledger.length).toBeGreaterThanOrEqual(3);
    expect(
      cycles.filter((cycle) => ['unsure', 'submitting', 'claimed', 'quoted'].includes(cycle.state)),
    ).toEqual([]);
    // Every order at the service is recorded, owned by the cycle whose quote it used; none twice per cycle.
    const ordersPerCycle = new Map<number, number>();
    for (const order of ledger) {
      const recorded = await test.database.orders.getByServiceId('default', order.id);
      expect(recorded, `order ${order.id} at the service is not recorded`).not.toBeNull();
      expect(recorded!.origin).toBe('cycle');
      const cycle = cycles.find((candidate) => candidate.id === recorded!.cycleId)!;
      expect(cycle.quoteId).toBe(order.quoteId);
      expect(cycle.state).toBe('placed');
      ordersPerCycle.set(cycle.id, (ordersPerCycle.get(cycle.id) ?? 0) + 1);
    }
    expect([...ordersPerCycle.values()].every((count) => count === 1)).toBe(true);
    const placed = cycles.filter((cycle) => cycle.state === 'placed');
    expect(placed).toHaveLength(ledger.length);
    expect(cycles.some((cycle) => cycle.reasonCode === 'reconciled')).toBe(true);
  }, 120_000);
});

function reconcilerContext(test: TestDatabase, url: string, now: Date): EngineContext {
  const metrics = createMetrics({ defaultMetrics: false });
  const clock = () => now;
  return {
    database: test.database,
    accounts: new Map([
      [
        DEFAULT_ACCOUNT,
        { name: DEFAULT_ACCOUNT, client: createPurchaseClient({ baseUrl: url, token: DEMO_TOKEN }) },
      ],
    ]),
    metrics,
    logger: createLogger({ level: 'silent', destination: new Writable({ write: (_c, _e, done) => done() }) }),
    settings: engineSchema.parse(ENGINE),
    dryRun: false,
    replicaId: 'final-reconciler',
    cyclesInFlight: new Set(),
    clock,
    apiPace: () => undefined,
    killSwitch: new KillSwitch({ control: test.database.control, cacheMs: 1_000, clock }),
    tolerances: DEFAULT_QUOTE_TOLERANCES,
  };
}

/** The seed from the environment when set (a replay), else a fresh one. */
function crashSeed(fromEnvironment: string | undefined): number {
  if (fromEnvironment === undefined || fromEnvironment === '') return randomInt(2 ** 31);
  const seed = Number(fromEnvironment);
  if (!Number.isSafeInteger(seed) || seed < 0)
    throw new Error(
      `TREASURY_CRASH_SEED must be a non-negative integer, not ${JSON.stringify(fromEnvironment)}`,
    );
  return seed;
}
