import { writeFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openConsoleStore } from '../../src/db/index.js';
import { DEMO_TOKEN, type RunningSandbox, startSandbox } from '../../src/sandbox/index.js';
import { type CommandDatabase, createCommandDatabase } from '../support/database.js';
import { runCommand, writeWorkerFiles } from '../support/worker-process.js';

const NAME = 'governed-cli';
const documentWith = (amount: string) => `name: ${NAME}
kind: dca
symbol: USDTBRL
amount: "${amount}"
schedule: "0 10 * * *"
timezone: UTC
`;

/**
 * `strategy versions|diff|approve` and `once` with TREASURY_STRATEGY_CHANGES=approve, as child processes
 * against the sandbox: what `once` buys before and after an approval, the listing and the diff, and every
 * refusal as one line on stderr with exit 1.
 */
describe('strategy commands with changes: approve', { timeout: 90_000 }, () => {
  let sandbox: RunningSandbox;
  let test: CommandDatabase;
  let env: Record<string, string>;
  let slot = Date.parse('2031-02-03T10:00:00Z');

  /** `once --json` at a fresh slot: the amount it bought and the version its cycle recorded. */
  async function once(): Promise<{ amount: string; version: number | null }> {
    slot += 86_400_000;
    const at = new Date(slot);
    const result = await runCommand(['once', '--json', '--slot', at.toISOString()], env);
    expect(result.stderr).not.toContain('"level":50');
    expect(result.code).toBe(0);
    const [cycle] = JSON.parse(result.stdout).cycles;
    expect(cycle).toMatchObject({ strategy: NAME, outcome: 'placed' });
    const recorded = await test.use((database) => database.cycles.getBySlot(NAME, at));
    return { amount: cycle.amount, version: recorded!.strategyVersion };
  }

  /** A refused command: exit 1, nothing on stdout, one line `treasury-bot: CODE: message` on stderr. */
  async function refused(args: string[], extraEnv: Record<string, string> = {}): Promise<string> {
    // Log lines (the waiting change's warning) go to stderr too; this looks at the error line alone.
    const result = await runCommand(args, { ...env, LOG_LEVEL: 'silent', ...extraEnv });
    expect(result, result.stderr).toMatchObject({ code: 1 });
    expect(result.stdout).toBe('');
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
    return result.stderr.trim();
  }

  beforeAll(async () => {
    sandbox = await startSandbox({ stepMs: 0 });
    const files = await writeWorkerFiles(documentWith('100.00'), 'engine:\n  reload:\n    watch: false\n');
    env = {
      ...files,
      TREASURY_API_URL: sandbox.url,
      TREASURY_API_TOKEN: DEMO_TOKEN,
      TREASURY_STRATEGY_CHANGES: 'approve',
      TREASURY_ACTOR: 'deployer',
      LOG_LEVEL: 'info',
    };
    test = await createCommandDatabase(env);
    await test.use(async (database) => {
      const { people } = openConsoleStore(database);
      for (const name of ['alice', 'bob', 'carol'])
        await people.add({ name, role: 'approver', passwordHash: 'unused' }, 'test');
      await people.add({ name: 'olga', role: 'operator', passwordHash: 'unused' }, 'test');
    });
  });
  afterAll(async () => {
    await sandbox.close();
    await test?.drop();
  });

  it('once buys nothing of a new strategy until its first version is approved, by someone else', async () => {
    const none = await runCommand(['once', '--json'], env);
    expect(none.code).toBe(0);
    expect(JSON.parse(none.stdout)).toEqual({ cycles: [] });
    expect(await refused(['once', '--strategy', NAME])).toBe(
      `treasury-bot: STRATEGY_NOT_APPROVED: strategy "${NAME}" has no approved version yet: version 1 waits for ` +
        `approval (treasury-bot strategy approve ${NAME} --version 1 --by PERSON)`,
    );
    // TREASURY_ACTOR is who the version was recorded as: that name cannot approve it.
    expect(await refused(['strategy', 'approve', NAME, '--version', '1'])).toBe(
      `treasury-bot: STRATEGY_SELF_APPROVAL: deployer recorded version 1 of ${NAME} and cannot approve it: another person must`,
    );
    const approved = await runCommand(['strategy', 'approve', NAME, '--version', '1', '--by', 'alice'], env);
    expect(approved.code).toBe(0);
    expect(approved.stdout).toContain(`version 1 of ${NAME} approved by alice`);
    expect(await once()).toEqual({ amount: '100', version: 1 });
  });

  it('a changed file keeps buying the approved amount until the change is approved', async () => {
    await writeFile(env.TREASURY_STRATEGIES!, `# raised by finance\n${documentWith('250.00')}`);
    expect(await once()).toEqual({ amount: '100', version: 1 });

    const listed = await runCommand(['strategy', 'versions', NAME, '--json'], env);
    expect(listed.code).toBe(0);
    const { versions } = JSON.parse(listed.stdout);
    expect(versions).toMatchObject([
      { version: 1, state: 'running', createdBy: 'deployer', approvedBy: 'alice', linesAdded: 6 },
      {
        version: 2,
        state: 'awaiting approval',
        createdBy: 'deployer',
        approvedBy: null,
        linesAdded: 2,
        linesRemoved: 1,
      },
    ]);
    const table = await runCommand(['strategy', 'versions', NAME], env);
    expect(table.stdout.split('\n')[0]).toMatch(
      /^version\s+state\s+changes\s+recorded\s+by\s+approved\s+by$/,
    );

    const diff = await runCommand(['strategy', 'diff', NAME, '--version', '2'], env);
    expect(diff.code).toBe(0);
    expect(diff.stdout).toBe(
      [
        `--- ${NAME} version 1`,
        `+++ ${NAME} version 2`,
        '@@ -1,6 +1,7 @@',
        '+# raised by finance',
        ` name: ${NAME}`,
        ' kind: dca',
        ' symbol: USDTBRL',
        '-amount: "100.00"',
        '+amount: "250.00"',
        ' schedule: "0 10 * * *"',
        ' timezone: UTC',
        '',
      ].join('\n'),
    );

    const approved = await runCommand(['strategy', 'approve', NAME, '--version', '2', '--by', 'bob'], env);
    expect(approved.code).toBe(0);
    expect(await once()).toEqual({ amount: '250', version: 2 });
  });

  it('refuses unknown strategies and versions, bad numbers, a second approval and a missing or invalid person', async () => {
    expect(await refused(['strategy', 'versions', 'nope'])).toBe(
      'treasury-bot: STRATEGY_NOT_FOUND: no strategy "nope" has versions',
    );
    expect(await refused(['strategy', 'diff', NAME, '--version', '9'])).toBe(
      `treasury-bot: STRATEGY_VERSION_NOT_FOUND: strategy ${NAME} has no version 9 (its versions are 1 to 2)`,
    );
    expect(await refused(['strategy', 'diff', NAME, '--version', '0'])).toBe(
      'treasury-bot: INVALID_ARGUMENT: --version must be a version number such as 2 (got "0")',
    );
    expect(await refused(['strategy', 'approve', 'nope', '--version', '1', '--by', 'bob'])).toBe(
      'treasury-bot: STRATEGY_NOT_FOUND: no strategy "nope" has versions',
    );
    expect(await refused(['strategy', 'approve', NAME, '--version', '2', '--by', 'carol'])).toMatch(
      new RegExp(
        `^treasury-bot: STRATEGY_VERSION_APPROVED: version 2 of ${NAME} was already approved by bob at 20`,
      ),
    );
    expect(await refused(['strategy', 'approve', NAME, '--version', '2'], { TREASURY_ACTOR: '' })).toBe(
      'treasury-bot: INVALID_ARGUMENT: say who acts: give --by PERSON or set TREASURY_ACTOR',
    );
    for (const automation of ['automation', 'Automation']) {
      expect(await refused(['strategy', 'approve', NAME, '--version', '2', '--by', automation])).toBe(
        `treasury-bot: INVALID_ARGUMENT: "automation" is the worker's name, not a person who can approve`,
      );
    }
    expect(await refused(['strategy', 'approve', NAME, '--version', '2', '--by', 'two words'])).toBe(
      'treasury-bot: PERSON_INVALID: the person must be 1 to 64 letters, digits, ., _, - or @ (got "two words")',
    );
  });
});
