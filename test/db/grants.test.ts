import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WORKER_TABLE_RIGHTS, workerGrantStatements } from '../../src/db/index.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { runCommand, writeWorkerFiles } from '../support/worker-process.js';

/**
 * The worker role's rights (src/db/grants.ts) name every table the migrations make, and no other: a new table
 * without rights would fail the worker at its first statement on it, a stale name would fail `migrate`.
 * What the rights allow is proven on a server by test/db/roles.test.ts.
 */
describe('the worker role grants', () => {
  let test: TestDatabase;
  beforeAll(async () => {
    test = await createTestDatabase();
  });
  afterAll(async () => {
    await test?.drop();
  });

  it('cover exactly the tables of the migrated schema', async () => {
    const rows = await test.database.withReservedConnection((sql) =>
      sql.query(
        "select table_name as name from information_schema.tables where table_schema = 'public' and table_type = 'BASE TABLE' order by 1",
      ),
    );
    expect(Object.keys(WORKER_TABLE_RIGHTS).sort()).toEqual(rows.map((row) => row.name));
  });

  it('delete only from replicas and the short-lived rows of the second factor and of idempotency keys, and never change the audit log', () => {
    const deletable = Object.entries(WORKER_TABLE_RIGHTS)
      .filter(([, rights]) => rights.includes('DELETE'))
      .map(([table]) => table);
    expect(deletable).toEqual([
      'replicas',
      'second_factors',
      'recovery_codes',
      'login_challenges',
      'api_idempotency_keys',
    ]);
    expect(WORKER_TABLE_RIGHTS.audit_log).toEqual(['SELECT', 'INSERT']);
  });

  it.each(['Worker', 'worker; drop table cycles', '', 'x'.repeat(64)])('refuse the role name %j', (role) => {
    expect(() => workerGrantStatements(role)).toThrow(/--grant-to must name a role in lower case/);
  });

  it('refuse a bad role name before opening the database', async () => {
    const refused = await runCommand(['migrate', '--grant-to', 'Worker'], await writeWorkerFiles('', ''));
    expect(refused).toMatchObject({
      code: 1,
      stderr:
        'treasury-bot: INVALID_ARGUMENT: --grant-to must name a role in lower case letters, digits and _ (got "Worker")\n',
    });
  });

  it('are refused on the embedded database, which has no roles', async () => {
    const refused = await runCommand(
      ['migrate', '--grant-to', 'treasury_worker'],
      await writeWorkerFiles('', ''),
    );
    expect(refused).toMatchObject({
      code: 1,
      stderr:
        'treasury-bot: INVALID_ARGUMENT: --grant-to needs a PostgreSQL database (DATABASE_URL): the embedded one has no roles\n',
    });
  });
});
