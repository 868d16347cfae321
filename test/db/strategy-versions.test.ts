import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Database, type LoadedStrategyText, openConsoleStore } from '../../src/db/index.js';
import { parseStrategyText, strategyHash } from '../../src/strategy/index.js';
import { createTestDatabase, type TestDatabase, testBackends } from '../support/database.js';

/** A strategy document with this amount, as the files would hold it, hashed as the worker hashes it. */
function loaded(name: string, amount: string, comment = ''): LoadedStrategyText {
  const text = `${comment}name: ${name}\nkind: dca\nsymbol: USDTBRL\namount: "${amount}"\nschedule: "0 10 * * *"\n`;
  const { strategies, problems } = parseStrategyText(text, 'test.yaml');
  expect(problems).toEqual([]);
  return { name, hash: strategyHash(strategies[0]!.strategy), text };
}

/**
 * The version record on both databases: numbering, diffs, what runs in each mode, approvals with their
 * refusals, and the audit rows and messages written with them.
 */
describe.each(testBackends())('strategy versions on %s', (backend) => {
  let test: TestDatabase;
  let db: Database;
  let now = Date.parse('2026-05-04T09:00:00Z');
  const clock = () => new Date(now);
  const apply = { changes: 'apply' as const, actor: 'automation' };
  const approve = { changes: 'approve' as const, actor: 'deployer' };

  /** Every audit row, oldest first. */
  const auditRows = async () => (await openConsoleStore(db).audit.list({ limit: 1000 })).reverse();
  const audit = async (subject: string) => (await auditRows()).filter((row) => row.subject === subject);

  beforeAll(async () => {
    test = await createTestDatabase(backend, { clock, routeNotifications: () => ['ops'] });
    db = test.database;
    const { people } = openConsoleStore(db);
    for (const name of ['alice', 'bob'])
      await people.add({ name, role: 'approver', passwordHash: 'unused' }, 'test');
  });
  afterAll(() => test.drop());

  it('numbers every distinct configuration once, with its diff, and applies it at once in apply mode', async () => {
    expect(await db.strategyVersions.record([loaded('a', '100.00')], apply)).toEqual([
      { name: 'a', fileVersion: 1, runningVersion: 1, runningContent: null },
    ]);
    now += 60_000;
    await db.strategyVersions.record([loaded('a', '200.00')], apply);
    // The same configuration written otherwise (a comment, "100" for "100.00") is version 1 again.
    now += 60_000;
    expect(await db.strategyVersions.record([loaded('a', '100', '# back to 100\n')], apply)).toEqual([
      { name: 'a', fileVersion: 1, runningVersion: 1, runningContent: null },
    ]);
    const versions = await db.strategyVersions.list('a');
    expect(versions.map((v) => [v.version, v.running, v.approvedBy, v.createdBy])).toEqual([
      [1, true, 'automation', 'automation'],
      [2, false, 'automation', 'automation'],
    ]);
    expect(versions[0]!.diff.split('\n').slice(0, 3)).toEqual([
      '--- /dev/null',
      '+++ a version 1',
      '@@ -0,0 +1,5 @@',
    ]);
    expect(versions[1]!.diff).toContain('--- a version 1\n+++ a version 2\n');
    expect(versions[1]!.diff).toContain('\n-amount: "100.00"\n+amount: "200.00"\n');
    expect(versions[1]!.content).toContain('amount: "200.00"');
    // One audit row per move of the running version: 1, then 2, then back to 1.
    expect((await audit('strategy:a')).map((row) => [row.action, row.before, row.after])).toEqual([
      ['strategy.version_applied', null, { version: 1 }],
      ['strategy.version_applied', { version: 1 }, { version: 2 }],
      ['strategy.version_applied', { version: 2 }, { version: 1 }],
    ]);
  });

  it('writes nothing when the files hold what already runs', async () => {
    const before = (await auditRows()).length;
    await db.strategyVersions.record([loaded('a', '100.00')], apply);
    expect((await auditRows()).length).toBe(before);
  });

  it('in approve mode keeps the approved version running, hands its text back, and announces the change once', async () => {
    await db.strategyVersions.record([loaded('b', '100.00')], apply);
    const change = loaded('b', '300.00');
    const [first] = await db.strategyVersions.record([change], approve);
    expect(first).toMatchObject({ fileVersion: 2, runningVersion: 1 });
    expect(first!.runningContent).toContain('amount: "100.00"');
    // A second replica loading the same file: no new version, no second message.
    await db.strategyVersions.record([change], approve);
    const messages = (await db.notifications.listRecent(50)).filter((m) => m.subject === 'strategy:b');
    expect(messages).toHaveLength(1);
    expect(messages[0]).toMatchObject({ type: 'approval_needed' });
    expect(messages[0]!.data).toMatchObject({
      what: 'strategy_version',
      strategy: 'b',
      version: 2,
      runningVersion: 1,
    });
    expect(String(messages[0]!.data.diff)).toContain('+amount: "300.00"');

    expect(await db.strategyVersions.runningChoices(new Map([['b', 2]]))).toEqual(new Map([['b', 1]]));
    const approved = await db.strategyVersions.approve('b', 2, 'alice');
    expect(approved).toMatchObject({ version: 2, approvedBy: 'alice', running: false });
    expect(await db.strategyVersions.runningChoices(new Map([['b', 2]]))).toEqual(new Map([['b', 2]]));
    // The worker's next pass moves to it, with its own audit row.
    expect(await db.strategyVersions.record([change], approve)).toEqual([
      { name: 'b', fileVersion: 2, runningVersion: 2, runningContent: null },
    ]);
    expect(
      (await audit('strategy:b')).slice(1).map((row) => [row.actor, row.action, row.before, row.after]),
    ).toEqual([
      ['alice', 'strategy.version_approved', { version: 1 }, { version: 2 }],
      ['deployer', 'strategy.version_applied', { version: 1 }, { version: 2 }],
    ]);
  });

  it('runs nothing of a new strategy until its first version is approved', async () => {
    const [waiting] = await db.strategyVersions.record([loaded('c', '50.00')], approve);
    expect(waiting).toEqual({ name: 'c', fileVersion: 1, runningVersion: null, runningContent: null });
    expect((await db.strategyVersions.list('c'))[0]).toMatchObject({
      createdBy: 'deployer',
      approvedAt: null,
    });
  });

  it('in approve mode takes a strategy that ran before versions existed, unchanged, as approved', async () => {
    const ran = loaded('d', '75.00');
    const changed = loaded('e', '75.00');
    await db.strategies.upsertSeen([
      { name: 'd', account: 'default', kind: 'dca', config: {}, hash: ran.hash },
      { name: 'e', account: 'default', kind: 'dca', config: {}, hash: loaded('e', '60.00').hash },
    ]);
    expect(await db.strategyVersions.record([ran, changed], approve)).toEqual([
      { name: 'd', fileVersion: 1, runningVersion: 1, runningContent: null },
      { name: 'e', fileVersion: 1, runningVersion: null, runningContent: null },
    ]);
    expect((await db.strategyVersions.list('d'))[0]).toMatchObject({ approvedBy: 'deployer', running: true });
  });

  it('refuses an unknown strategy or version, a second approval, and the recorder approving their own version', async () => {
    await expect(db.strategyVersions.approve('nope', 1, 'alice')).rejects.toMatchObject({
      code: 'STRATEGY_NOT_FOUND',
    });
    await expect(db.strategyVersions.approve('c', 9, 'alice')).rejects.toMatchObject({
      code: 'STRATEGY_VERSION_NOT_FOUND',
      message: 'strategy c has no version 9 (its versions are 1 to 1)',
    });
    await expect(db.strategyVersions.approve('c', 1, 'deployer')).rejects.toMatchObject({
      code: 'STRATEGY_SELF_APPROVAL',
    });
    await db.strategyVersions.approve('c', 1, 'alice');
    await expect(db.strategyVersions.approve('c', 1, 'bob')).rejects.toMatchObject({
      code: 'STRATEGY_VERSION_APPROVED',
    });
    const approvals = (await audit('strategy:c')).filter((row) => row.action === 'strategy.version_approved');
    expect(approvals.map((row) => row.actor)).toEqual(['alice']);
  });

  // Last: its hundreds of audit rows would crowd the ones the other tests read out of auditRows' page.
  it('records a set larger than one slice (a first start with thousands of strategies) completely', async () => {
    const names = Array.from({ length: 600 }, (_, index) => `many-${String(index).padStart(3, '0')}`);
    expect(
      await db.strategyVersions.record(
        names.map((name) => loaded(name, '100.00')),
        apply,
      ),
    ).toEqual(names.map((name) => ({ name, fileVersion: 1, runningVersion: 1, runningContent: null })));
    now += 60_000;
    // A change of every one waits in approve mode: each slice reads the texts it diffs against.
    expect(
      await db.strategyVersions.record(
        names.map((name) => loaded(name, '200.00')),
        approve,
      ),
    ).toEqual(
      names.map((name) => ({
        name,
        fileVersion: 2,
        runningVersion: 1,
        runningContent: expect.stringContaining(`name: ${name}\n`),
      })),
    );
    for (const name of [names[0]!, names[299]!, names.at(-1)!]) {
      const versions = await db.strategyVersions.list(name);
      expect(versions.map((v) => [v.version, v.running, v.approvedBy])).toEqual([
        [1, true, 'automation'],
        [2, false, null],
      ]);
      expect(versions[1]!.diff).toContain(`--- ${name} version 1\n+++ ${name} version 2\n`);
    }
  });
});
