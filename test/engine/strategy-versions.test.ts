import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Database, openConsoleStore, openDatabase } from '../../src/db/index.js';
import { type EngineContext, type ReloadResult, Worker } from '../../src/engine/index.js';
import { d, type EngineBench, engineSettings, replicaOn, startEngineBench } from './support/harness.js';

const NAME = 'governed-dca';
/** Once a year (1 January, 10:00 UTC): the scheduler's catch-up sweep never fires it during the test. */
const documentWith = (amount: string) => `# Bought for the treasury; changes need a second person.
name: ${NAME}
kind: dca
symbol: USDTBRL
amount: "${amount}"
schedule: "0 10 1 1 *"
timezone: UTC
`;

/**
 * TREASURY_STRATEGY_CHANGES=approve in a real worker against the sandbox: a new strategy waits for its first
 * approval, a changed file leaves the approved version buying until a person approves the change (which
 * the worker notices by itself), a restart keeps running the last approved version, and each cycle records
 * the version it ran under. Cycles are driven by scheduler ticks at chosen instants.
 */
describe('governed strategy changes in a running worker', () => {
  let bench: EngineBench;
  let context: EngineContext;
  let folder: string;
  let file: string;
  let worker: Worker;
  let waiting: ((result: ReloadResult) => void) | undefined;
  let year = 2030;

  const startWorker = async () => {
    const started = new Worker(context, {
      strategiesPath: file,
      useCron: false,
      versions: { changes: 'approve', actor: 'deployer' },
    });
    started.onReload((result) => {
      waiting?.(result);
      waiting = undefined;
    });
    await started.start();
    return started;
  };
  /** The reload that the worker's approvals poll starts once it sees an approval. */
  const nextReload = () =>
    new Promise<ReloadResult>((resolve) => {
      waiting = resolve;
    });

  /** One cycle at the next yearly slot through the worker's scheduler: what it bought and under which version. */
  const buy = async () => {
    const slot = new Date(Date.UTC(year++, 0, 1, 10, 0, 0));
    worker.scheduler.tick(NAME, new Date(slot.getTime() + 10));
    await worker.scheduler.settled();
    const cycle = await bench.database.cycles.getBySlot(NAME, slot);
    expect(cycle?.state).toBe('placed');
    const order = await bench.client.getOrder(cycle!.serviceOrderId!);
    return { amount: order.amount.toFixed(2), version: cycle!.strategyVersion };
  };

  beforeAll(async () => {
    bench = await startEngineBench();
    const { people } = openConsoleStore(bench.database);
    for (const name of ['alice', 'bob'])
      await people.add({ name, role: 'approver', passwordHash: 'unused' }, 'test');
    context = {
      ...bench.context,
      settings: engineSettings({ reload: { watch: false }, approvals: { pollMs: 20 } }),
    };
    folder = await mkdtemp(join(tmpdir(), 'tb-versions-'));
    file = join(folder, 'strategies.yaml');
    await writeFile(file, documentWith('100.00'));
    worker = await startWorker();
  });
  afterAll(async () => {
    await worker.stop();
    await bench.close();
    await rm(folder, { recursive: true, force: true });
  });

  it('does not run a new strategy until a person approves its first version', async () => {
    expect(worker.scheduler.size).toBe(0);
    expect(worker.strategies).toEqual([]);
    expect(
      bench.lines.some((line) => line.alert === 'strategy_change_pending' && line.strategy === NAME),
    ).toBe(true);
    const reloaded = nextReload();
    await bench.database.strategyVersions.approve(NAME, 1, 'alice');
    expect(await reloaded).toMatchObject({ applied: true, added: [NAME], waiting: [] });
    expect(await buy()).toEqual({ amount: '100.00', version: 1 });
  });

  it('keeps buying the approved amount while a change waits, and the new one once it is approved', async () => {
    await writeFile(file, documentWith('250.00'));
    expect(await worker.reload()).toMatchObject({ applied: true, changed: [], waiting: [NAME] });
    expect(await buy()).toEqual({ amount: '100.00', version: 1 });
    expect(await buy()).toEqual({ amount: '100.00', version: 1 });

    const reloaded = nextReload();
    await bench.database.strategyVersions.approve(NAME, 2, 'bob');
    expect(await reloaded).toMatchObject({ applied: true, changed: [NAME], waiting: [] });
    expect(await buy()).toEqual({ amount: '250.00', version: 2 });
  });

  it('after a restart runs the last approved version, not the unapproved file', async () => {
    await writeFile(file, documentWith('400.00'));
    await worker.stop();
    worker = await startWorker();
    expect(worker.strategies.map((strategy) => [strategy.name, strategy.version])).toEqual([[NAME, 2]]);
    expect(await buy()).toEqual({ amount: '250.00', version: 2 });
    expect((await bench.database.strategyVersions.list(NAME)).map((v) => [v.version, v.running])).toEqual([
      [1, false],
      [2, true],
      [3, false],
    ]);
  });

  it('wrote an audit row for every approval and every version applied', async () => {
    const rows = (await openConsoleStore(bench.database).audit.list())
      .reverse()
      .filter((row) => row.subject?.startsWith('strategy:'));
    expect(rows.map((row) => [row.actor, row.action, row.subject, row.before, row.after])).toEqual([
      ['alice', 'strategy.version_approved', `strategy:${NAME}`, null, { version: 1 }],
      ['deployer', 'strategy.version_applied', `strategy:${NAME}`, null, { version: 1 }],
      ['bob', 'strategy.version_approved', `strategy:${NAME}`, { version: 1 }, { version: 2 }],
      ['deployer', 'strategy.version_applied', `strategy:${NAME}`, { version: 1 }, { version: 2 }],
    ]);
  });
});

/**
 * Issue 32, item 2: a version approved in `approve` mode runs from the next slot, within 2 s of the approval
 * by the test's own clock, on every replica (on PostgreSQL each with its own pool), with the worker's
 * settings as shipped: nobody reloads it by hand.
 */
describe('a version approved while two replicas run', () => {
  let bench: EngineBench;
  let second: Database;
  let folder: string;
  let file: string;
  let workers: Worker[];

  beforeAll(async () => {
    bench = await startEngineBench({ replicaId: 'replica-a', engine: { reload: { watch: false } } });
    second = bench.test.url ? await openDatabase({ url: bench.test.url, maxConnections: 5 }) : bench.database;
    const { people } = openConsoleStore(bench.database);
    await people.add({ name: 'alice', role: 'approver', passwordHash: 'unused' }, 'test');
    folder = await mkdtemp(join(tmpdir(), 'tb-versions-'));
    file = join(folder, 'strategies.yaml');
    await writeFile(file, documentWith('100.00'));
    const replicaB: EngineContext = replicaOn(bench, second);
    workers = [bench.context, replicaB].map(
      (context) =>
        new Worker(context, {
          strategiesPath: file,
          useCron: false,
          versions: { changes: 'approve', actor: 'deployer' },
        }),
    );
    for (const worker of workers) await worker.start();
    await bench.database.strategyVersions.approve(NAME, 1, 'alice');
    // Version 1 running everywhere; version 2 in the file, waiting.
    await writeFile(file, documentWith('250.00'));
    for (const worker of workers) {
      await worker.reload();
      expect(worker.strategies.map((strategy) => strategy.version)).toEqual([1]);
    }
  });
  afterAll(async () => {
    await Promise.all(workers.map((worker) => worker.stop()));
    if (second !== bench.database) await second.close();
    await bench.close();
    await rm(folder, { recursive: true, force: true });
  });

  /** The slot ticked on both replicas at once: exactly one buys it; its order's amount and version. */
  const buyOnBoth = async (slot: Date) => {
    for (const worker of workers) worker.scheduler.tick(NAME, new Date(slot.getTime() + 10));
    await Promise.all(workers.map((worker) => worker.scheduler.settled()));
    const cycle = await bench.database.cycles.getBySlot(NAME, slot);
    expect(cycle?.state).toBe('placed');
    const orders = bench.sandbox.ledger().filter((order) => order.quoteId === cycle!.quoteId);
    expect(orders).toHaveLength(1);
    return { amount: d(orders[0]!.amount).toFixed(2), version: cycle!.strategyVersion };
  };

  it('runs from the next slot, within 2 s of the approval, on every replica', async () => {
    expect(await buyOnBoth(new Date(Date.UTC(2040, 0, 1, 10)))).toEqual({ amount: '100.00', version: 1 });
    const runningTwo = workers.map(
      (worker) =>
        new Promise<number>((resolve) => {
          worker.onReload(() => {
            if (worker.strategies.some((strategy) => strategy.version === 2)) resolve(performance.now());
          });
        }),
    );
    const approvedAt = performance.now();
    await bench.database.strategyVersions.approve(NAME, 2, 'alice');
    const usedAt = await Promise.race([
      Promise.all(runningTwo),
      new Promise<number[]>((resolve) => setTimeout(resolve, 5_000, [Number.NaN])),
    ]);
    expect(
      Math.max(...usedAt) - approvedAt,
      'milliseconds from the approval to every replica running it',
    ).toBeLessThan(2_000);
    expect(await buyOnBoth(new Date(Date.UTC(2041, 0, 1, 10)))).toEqual({ amount: '250.00', version: 2 });
  });
});
