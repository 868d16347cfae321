import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  type ConsoleStore,
  openConsoleStore,
  sqlStateOf,
  workerGrantStatements,
} from '../../src/db/index.js';
import { resolveUnsureCycle } from '../../src/engine/index.js';
import {
  createTestDatabase,
  type TestBackend,
  type TestDatabase,
  testBackends,
} from '../support/database.js';

const onPostgres = inject('treasuryDatabase').backend === 'postgres';
if (!onPostgres) {
  process.stderr.write(
    '\n!!! audit.test.ts: the worker-role grant test SKIPPED, it needs a PostgreSQL server (the trigger is tested on PGlite)\n\n',
  );
}

/**
 * The audit log is append-only whoever asks (a trigger refuses UPDATE, DELETE and TRUNCATE for every role),
 * each action's row is written in the action's own transaction (a refused action leaves neither), and under
 * the worker role's grants (`migrate --grant-to`) that role cannot change a row even without the trigger's help.
 */
describe.each(testBackends())('audit log on %s', (backend: TestBackend) => {
  let test: TestDatabase;
  let store: ConsoleStore;

  beforeAll(async () => {
    test = await createTestDatabase(backend);
    store = openConsoleStore(test.database);
    await test.database.strategies.upsertSeen([
      { name: 'audited', kind: 'dca', account: 'default', config: {}, hash: 'h' },
    ]);
  });

  afterAll(async () => {
    await test?.drop();
  });

  it('records the kill switch with its state before and after, in order', async () => {
    await store.actions.pauseAll('ana', 'market closed');
    await store.actions.resumeAll('bruno');
    const [resume, pause] = await store.audit.list({ limit: 2 });
    expect(pause).toMatchObject({ actor: 'ana', action: 'kill_switch.pause', subject: 'kill_switch' });
    expect(pause?.before).toMatchObject({ paused: false });
    expect(pause?.after).toMatchObject({ paused: true, reason: 'market closed', changedBy: 'ana' });
    expect(resume).toMatchObject({ actor: 'bruno', action: 'kill_switch.resume' });
    expect(resume?.after).toMatchObject({ paused: false });
  });

  it('writes nothing for a refused action: resuming a strategy with an unsure cycle', async () => {
    await store.actions.pauseStrategy('audited', 'ana', 'checking');
    const cycle = await test.database.cycles.claimSlot({
      strategy: 'audited',
      account: 'default',
      slot: new Date('2026-01-01T10:00:00Z'),
      trigger: 'schedule',
      owner: 'test',
    });
    await test.database.cycles.transition(cycle!.id, 'claimed', 'submitting');
    await test.database.cycles.transition(cycle!.id, 'submitting', 'unsure');
    const [before] = await store.audit.list({ limit: 1 });
    await expect(store.actions.resumeStrategy('audited', 'ana')).rejects.toMatchObject({
      code: 'STRATEGY_HAS_UNSURE_CYCLES',
    });
    const [after] = await store.audit.list({ limit: 1 });
    expect(after?.id).toBe(before?.id);
    expect((await test.database.strategies.get('audited'))?.haltReason).toBe(
      'paused by ana in the console: checking',
    );

    await resolveUnsureCycle({ database: test.database }, cycle!.id, { kind: 'not_placed' }, 'ana');
    await store.actions.resumeStrategy('audited', 'ana');
    const [resumed, settled] = await store.audit.list({ limit: 2 });
    expect(settled).toMatchObject({ action: 'cycle.reconcile', subject: `cycle:${cycle!.id}` });
    expect(resumed).toMatchObject({ action: 'strategy.resume', after: { haltedAt: null } });
  });

  it.each([
    ['update', 'update audit_log set actor = $1', ['mallory']],
    ['delete', 'delete from audit_log', []],
    ['truncate', 'truncate audit_log', []],
  ])('refuses %s for every role, the owner included', async (_name, statement, params) => {
    const error = await test.database
      .withReservedConnection((connection) => connection.query(statement, params))
      .catch((caught: unknown) => caught);
    expect(sqlStateOf(error)).toBe('42501');
    expect(String((error as Error).message)).toMatch(/append-only/);
    const rows = await store.audit.list({ limit: 1000 });
    expect(rows.length).toBeGreaterThan(0);
    expect(rows.every((row) => row.actor !== 'mallory')).toBe(true);
  });

  it.skipIf(backend !== 'postgres')(
    "refuses update and delete to the worker role under the worker's grants",
    async () => {
      const role = `tb_worker_${randomBytes(4).toString('hex')}`;
      const sql = postgres(test.url!, { max: 1, onnotice: () => {} });
      try {
        await sql.unsafe(`create role ${role} nologin`);
        // What `treasury-bot migrate --grant-to` gives the worker role (README, Database roles).
        for (const statement of workerGrantStatements(role)) await sql.unsafe(statement);
        await sql.begin(async (transaction) => {
          await transaction.unsafe(`set local role ${role}`);
          await transaction.unsafe(
            "insert into audit_log (at, actor, action) values (now(), 'worker', 'kill_switch.pause')",
          );
        });
        for (const statement of ["update audit_log set actor = 'x'", 'delete from audit_log']) {
          const error = await sql
            .begin(async (transaction) => {
              await transaction.unsafe(`set local role ${role}`);
              await transaction.unsafe(statement);
            })
            .catch((caught: unknown) => caught);
          expect(sqlStateOf(error), statement).toBe('42501');
          expect(String((error as Error).message)).toMatch(/permission denied/);
        }
      } finally {
        await sql.unsafe(`drop owned by ${role}`).catch(() => undefined);
        await sql.unsafe(`drop role if exists ${role}`).catch(() => undefined);
        await sql.end({ timeout: 1 });
      }
    },
  );
});
