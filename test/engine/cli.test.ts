import { writeFile } from 'node:fs/promises';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO_TOKEN, type RunningSandbox, startSandbox } from '../../src/sandbox/index.js';
import { type CommandDatabase, createCommandDatabase } from '../support/database.js';
import { runCommand, startCommand, writeWorkerFiles } from '../support/worker-process.js';

const STRATEGIES = `name: cli-dca
kind: dca
symbol: USDTBRL
amount: "100.00"
schedule: "0 10 * * *"
timezone: UTC
---
name: cli-dip
kind: threshold
symbol: USDTBRL
amount: "100.00"
checkEvery: "0 * * * *"
timezone: UTC
buyBelow: "1.00"
---
name: cli-off
kind: dca
symbol: USDTBRL
amount: "100.00"
schedule: "0 10 * * *"
enabled: false
`;

const REPORT_KEYS = [
  'amount',
  'orderId',
  'outcome',
  'price',
  'quoteId',
  'reason',
  'slot',
  'strategy',
  'totalCost',
];

/** The worker commands as an operator or a script runs them: child processes, stdout, stderr, exit codes. */
describe('worker commands', () => {
  let sandbox: RunningSandbox;
  let test: CommandDatabase;
  let env: Record<string, string>;

  beforeAll(async () => {
    sandbox = await startSandbox({ stepMs: 0 });
    const files = await writeWorkerFiles(STRATEGIES, 'engine:\n  reload:\n    watch: false\n');
    env = { ...files, TREASURY_API_URL: sandbox.url, TREASURY_API_TOKEN: DEMO_TOKEN, LOG_LEVEL: 'info' };
    // With PostgreSQL, a database of its own; otherwise the embedded database in the temp folder.
    test = await createCommandDatabase(env);
  });
  afterAll(async () => {
    await sandbox.close();
    await test?.drop();
  });

  it('once --json: one JSON document on stdout, logs on stderr, exit 0, and a claimed slot is never bought twice', async () => {
    const slot = '2030-05-05T10:00:00.000Z';
    const first = await runCommand(['once', '--slot', slot, '--json'], env);
    expect(first.code).toBe(0);
    const { cycles } = JSON.parse(first.stdout) as { cycles: Record<string, unknown>[] };
    expect(first.stdout.trim().split('\n')).toHaveLength(1);
    expect(cycles.map((cycle) => [cycle.strategy, cycle.outcome, cycle.reason])).toEqual([
      ['cli-dca', 'placed', 'ok'],
      ['cli-dip', 'skipped', 'price_not_below_threshold'],
    ]);
    for (const cycle of cycles) expect(Object.keys(cycle).sort()).toEqual(REPORT_KEYS);
    expect(cycles[0]).toMatchObject({ slot, amount: '100' });
    expect(cycles[0]!.price).toMatch(/^\d+\.\d+$/);
    expect(first.stderr).toContain('"msg":"cycle placed"');

    const again = await runCommand(['once', '--slot', slot, '--json', '--strategy', 'cli-dca'], env);
    expect(again.code).toBe(0);
    expect(JSON.parse(again.stdout).cycles).toEqual([
      expect.objectContaining({ strategy: 'cli-dca', outcome: 'skipped', reason: 'slot_already_claimed' }),
    ]);
    expect(sandbox.ledger().filter((order) => order.quoteId === cycles[0]!.quoteId)).toHaveLength(1);
  });

  it('once exits 1 when a cycle failed, and refuses an unknown strategy or a bad slot with one line', async () => {
    sandbox.setFaults({ quote: { errorRate: 1 } });
    const failed = await runCommand(['once', '--json', '--strategy', 'cli-off'], env);
    sandbox.setFaults({});
    expect(failed.code).toBe(1);
    expect(JSON.parse(failed.stdout).cycles[0]).toMatchObject({ strategy: 'cli-off', outcome: 'failed' });

    const unknown = await runCommand(['once', '--strategy', 'nope'], env);
    expect(unknown.code).toBe(1);
    expect(unknown.stdout).toBe('');
    expect(unknown.stderr.trim()).toMatch(/^treasury-bot: INVALID_ARGUMENT: unknown strategy "nope"/);
    const badSlot = await runCommand(['once', '--slot', 'yesterday'], env);
    expect(badSlot.code).toBe(1);
    expect(badSlot.stderr).toContain('--slot must be an ISO 8601 instant');
  });

  it('pause makes cycles skip (paused) until resume', async () => {
    const paused = await runCommand(['pause', '--reason', 'incident 42', '--json'], env);
    expect(paused.code).toBe(0);
    expect(JSON.parse(paused.stdout)).toMatchObject({ paused: true, reason: 'incident 42' });
    const skipped = await runCommand(['once', '--json', '--strategy', 'cli-dca'], env);
    expect(JSON.parse(skipped.stdout).cycles[0]).toMatchObject({ outcome: 'skipped', reason: 'paused' });
    const resumed = await runCommand(['resume'], env);
    expect(resumed.code).toBe(0);
    expect(resumed.stdout).toMatch(/^resumed by /);
  });

  it('reconcile runs a pass now, prints what it did, and records who ran it in the audit log', async () => {
    const result = await runCommand(['reconcile', '--json', '--by', 'olga'], env);
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({
      recovery: { madeUnsure: 0, abandoned: 0 },
      reconcile: { examined: 0 },
      approvals: { expired: 0, resumed: [] },
      errors: [],
    });
    const audit = JSON.parse((await runCommand(['audit', '--json'], env)).stdout) as object[];
    expect(audit.at(-1)).toMatchObject({
      actor: 'olga',
      action: 'reconcile.run',
      after: { recovery: { madeUnsure: 0 }, errors: [] },
    });
  });

  it('run: /readyz with the paused label, SIGHUP reloads the strategies, SIGTERM stops with exit 0', async () => {
    const worker = startCommand(['run'], { ...env, TREASURY_OPS_ADDR: '127.0.0.1:0' });
    const listening = JSON.parse(await worker.waitForLine('ops listener listening')) as { port: number };
    await worker.waitForLine('worker started');
    const ready = await request(`http://127.0.0.1:${listening.port}/readyz`);
    const body = (await ready.body.json()) as { ready: boolean; paused: boolean; checks: object };
    expect(ready.statusCode).toBe(200);
    expect(body).toMatchObject({ ready: true, paused: false, checks: { database: { ok: true } } });

    await writeFile(env.TREASURY_STRATEGIES!, STRATEGIES.replace('buyBelow: "1.00"', 'buyBelow: "2.00"'));
    worker.child.kill('SIGHUP');
    expect(await worker.waitForLine('strategies reloaded')).toContain('"changed":["cli-dip"]');
    worker.child.kill('SIGTERM');
    expect((await worker.exited).code).toBe(0);
    expect(worker.lines.some((line) => line.includes('"msg":"worker stopped"'))).toBe(true);
  });
});
