import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openConsoleStore } from '../../src/db/index.js';
import { type EngineContext, type ReloadResult, Worker } from '../../src/engine/index.js';
import { type EngineBench, engineSettings, startEngineBench } from './support/harness.js';

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
      settings: engineSettings({ reload: { watch: false, approvalPollMs: 20 } }),
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
