import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ReloadResult, Worker } from '../../src/engine/index.js';
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

  it('reloads on demand (what SIGHUP calls) and applies a removal', async () => {
    await rm(join(folder, 'b.yaml'));
    const result = await worker.reload();
    expect(result).toMatchObject({ applied: true, strategies: ['alpha'], removed: ['beta'] });
    expect(worker.scheduler.size).toBe(1);
  });
});
