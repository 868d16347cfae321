import { mkdir, mkdtemp, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { advisoryLockKey } from '../../src/db/advisory-key.js';
import { type ReloadResult, Worker } from '../../src/engine/index.js';
import { testBackends } from '../support/database.js';
import { type EngineBench, engineSettings, startEngineBench } from './support/harness.js';

const file = (name: string, schedule: string) => `name: ${name}
kind: dca
symbol: USDTBRL
amount: "100.00"
schedule: "${schedule}"
timezone: UTC
`;

/** Hot reload through the file watch: valid changes applied, invalid ones rejected with the old set kept. */
describe('strategy hot reload', () => {
  let bench: EngineBench;
  let folder: string;
  let worker: Worker;
  let waiting: ((result: ReloadResult) => void) | undefined;
  /** Resolves with the next reload the worker reports (the file watch fires it). */
  const nextReload = () =>
    new Promise<ReloadResult>((resolve) => {
      waiting = resolve;
    });

  beforeAll(async () => {
    bench = await startEngineBench();
    folder = await mkdtemp(join(tmpdir(), 'tb-reload-'));
    await writeFile(join(folder, 'a.yaml'), file('alpha', '0 10 * * *'));
    const context = { ...bench.context, settings: engineSettings({ reload: { debounceMs: 50 } }) };
    worker = new Worker(context, { strategiesPath: folder, useCron: false });
    worker.onReload((result) => {
      waiting?.(result);
      waiting = undefined;
    });
    await worker.start();
  });
  afterAll(async () => {
    await worker.stop();
    await bench.close();
    await rm(folder, { recursive: true, force: true });
  });

  it('applies a valid change without a restart and records the strategies', async () => {
    const reloaded = nextReload();
    await writeFile(join(folder, 'b.yaml'), file('beta', '*/5 * * * * *'));
    expect(await reloaded).toMatchObject({ applied: true, strategies: ['alpha', 'beta'], added: ['beta'] });
    expect(worker.scheduler.size).toBe(2);
    expect(await bench.database.strategies.get('beta')).toMatchObject({ kind: 'dca' });
  });

  it('rejects an invalid change with its problems logged, and the previous strategies keep running', async () => {
    const reloaded = nextReload();
    await writeFile(join(folder, 'b.yaml'), `${file('beta', 'not a cron')}bogus: 1\n`);
    const result = await reloaded;
    expect(result.applied).toBe(false);
    const problems = (result as { problems: string[] }).problems.join('\n');
    expect(problems).toContain('b.yaml');
    expect(problems).toContain('bogus');
    expect(worker.strategies.map((strategy) => strategy.name)).toEqual(['alpha', 'beta']);
    expect(worker.scheduler.size).toBe(2);
    const logged = bench.lines.find((line) => line.msg.startsWith('strategy change rejected'));
    expect(JSON.stringify(logged?.problems)).toContain('b.yaml');
  });
});

/**
 * A reload on demand, with the file watch off: with it on, the watch's own reload of the same removal could
 * run first (CI's Node 24 pass saw it), and the on-demand one then had nothing left to remove.
 */
describe('strategy reload on demand', () => {
  it('reloads on demand (what SIGHUP calls) and applies a removal', async () => {
    const bench = await startEngineBench();
    const folder = await mkdtemp(join(tmpdir(), 'tb-reload-demand-'));
    await writeFile(join(folder, 'a.yaml'), file('alpha', '0 10 * * *'));
    await writeFile(join(folder, 'b.yaml'), file('beta', '0 11 * * *'));
    const context = { ...bench.context, settings: engineSettings({ reload: { watch: false } }) };
    const worker = new Worker(context, { strategiesPath: folder, useCron: false });
    try {
      await worker.start();
      expect(worker.scheduler.size).toBe(2);
      await rm(join(folder, 'b.yaml'));
      const result = await worker.reload();
      expect(result).toMatchObject({ applied: true, strategies: ['alpha'], removed: ['beta'] });
      expect(worker.scheduler.size).toBe(1);
    } finally {
      await worker.stop();
      await bench.close();
      await rm(folder, { recursive: true, force: true });
    }
  });
});

/**
 * A Kubernetes ConfigMap mount: each file is a link `a.yaml -> ..data/a.yaml`, `..data` a link to a folder
 * `..<timestamp>/` holding the content, and an update writes a new timestamped folder, then swaps `..data`
 * by renaming a new link over it (atomic). The first release kept only plain files and loaded nothing.
 */
describe('strategies mounted from a ConfigMap', () => {
  let bench: EngineBench;
  let folder: string;
  let worker: Worker | undefined;

  beforeAll(async () => {
    bench = await startEngineBench();
    folder = await mkdtemp(join(tmpdir(), 'tb-configmap-'));
    await mkdir(join(folder, '..2031_01_01_00_00_00.1'));
    await writeFile(join(folder, '..2031_01_01_00_00_00.1', 'a.yaml'), file('alpha', '0 10 * * *'));
    await symlink('..2031_01_01_00_00_00.1', join(folder, '..data'));
    await symlink('..data/a.yaml', join(folder, 'a.yaml'));
  });
  afterAll(async () => {
    await worker?.stop();
    await bench.close();
    await rm(folder, { recursive: true, force: true });
  });

  it('loads the linked files, skips the dot entries, and reloads on the swap of ..data', async () => {
    const context = { ...bench.context, settings: engineSettings({ reload: { debounceMs: 50 } }) };
    worker = new Worker(context, { strategiesPath: folder, useCron: false });
    const results: ReloadResult[] = [];
    let bothApplied: (() => void) | undefined;
    worker.onReload((result) => {
      results.push(result);
      if (result.applied && result.strategies.length === 2) bothApplied?.();
    });
    await worker.start();
    expect(worker.scheduler.size).toBe(1);
    expect(await bench.database.strategies.get('alpha')).toMatchObject({ kind: 'dca' });

    const reloaded = new Promise<void>((resolve) => {
      bothApplied = resolve;
    });
    // As the kubelet does it: the new content in a new folder, the atomic swap of ..data, then a link for the
    // new key. Reloads may land between the steps; every one of them must apply (no half-read state).
    const next = '..2031_01_02_00_00_00.2';
    await mkdir(join(folder, next));
    await writeFile(join(folder, next, 'a.yaml'), file('alpha', '0 11 * * *'));
    await writeFile(join(folder, next, 'b.yaml'), file('beta', '0 12 * * *'));
    await symlink(next, join(folder, '..data_tmp'));
    await rename(join(folder, '..data_tmp'), join(folder, '..data'));
    await symlink('..data/b.yaml', join(folder, 'b.yaml'));

    await reloaded;
    expect(results.every((result) => result.applied)).toBe(true);
    expect(results.at(-1)).toMatchObject({ applied: true, strategies: ['alpha', 'beta'] });
    expect(worker.scheduler.size).toBe(2);
  });
});

/**
 * A change that lands while a reload is running, after that reload read the files: the first release joined
 * such a request to the running reload, so the change waited for the next file event (a ConfigMap swap's last
 * link could be lost that way). The running reload is held on the strategy versions' lock, which a new
 * version takes, while the second change is made.
 */
describe.runIf(testBackends().includes('postgres'))('a change made while a reload runs', () => {
  it('is applied by one more reload after the running one', async () => {
    const bench = await startEngineBench();
    const folder = await mkdtemp(join(tmpdir(), 'tb-reload-race-'));
    await writeFile(join(folder, 'a.yaml'), file('alpha', '0 10 * * *'));
    const context = { ...bench.context, settings: engineSettings({ reload: { watch: false } }) };
    const worker = new Worker(context, { strategiesPath: folder, useCron: false });
    await worker.start();
    const key = advisoryLockKey('strategy_versions');
    try {
      await bench.database.withReservedConnection(async (session) => {
        await session.query('select pg_advisory_lock($1::bigint)', [key]);
        await writeFile(join(folder, 'b.yaml'), file('beta', '0 11 * * *'));
        const first = worker.reload();
        // Until the reload waits on the lock, it may not have read the files yet.
        for (let waited = 0; ; waited += 10) {
          const [row] = await session.query(
            "select count(*)::int as waiting from pg_locks where locktype = 'advisory' and not granted",
          );
          if (Number(row?.waiting) > 0) break;
          if (waited > 20_000) throw new Error('the reload never waited on the versions lock');
          await delay(10);
        }
        await writeFile(join(folder, 'c.yaml'), file('gamma', '0 12 * * *'));
        const second = worker.reload();
        await session.query('select pg_advisory_unlock($1::bigint)', [key]);
        expect(await first).toMatchObject({ applied: true, strategies: ['alpha', 'beta'] });
        expect(await second).toMatchObject({ applied: true, strategies: ['alpha', 'beta', 'gamma'] });
      });
      expect(worker.scheduler.size).toBe(3);
    } finally {
      await worker.stop();
      await bench.close();
      await rm(folder, { recursive: true, force: true });
    }
  });
});
