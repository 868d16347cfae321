import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openConsoleStore } from '../../src/db/index.js';
import { DEMO_TOKEN, type RunningSandbox, startSandbox } from '../../src/sandbox/index.js';
import { type CommandDatabase, createCommandDatabase } from '../support/database.js';
import { runCommand, writeWorkerFiles } from '../support/worker-process.js';

const NAME = 'four-eyes';
const STRATEGIES = `name: ${NAME}
kind: dca
symbol: USDTBRL
amount: "100.00"
schedule: "0 10 * * *"
approval:
  required: above
  above: "50.00"
  approvers: 2
  timeout: 2h
`;

/**
 * The approval commands as child processes against the sandbox and a real database: `once` parks a cycle
 * that needs two people, `approvals` lists it, `approve` counts two distinct people (the same one twice is
 * refused), `envelope add|approve|list|revoke` with the creator refused as an approver, and every bad
 * argument is one line on stderr with exit 1.
 */
describe('approval commands', { timeout: 120_000 }, () => {
  let sandbox: RunningSandbox;
  let test: CommandDatabase;
  let env: Record<string, string>;

  beforeAll(async () => {
    sandbox = await startSandbox({ stepMs: 0 });
    const files = await writeWorkerFiles(STRATEGIES, 'engine:\n  reload:\n    watch: false\n');
    env = { ...files, TREASURY_API_URL: sandbox.url, TREASURY_API_TOKEN: DEMO_TOKEN, LOG_LEVEL: 'warn' };
    test = await createCommandDatabase(env);
    await test.use(async (database) => {
      const { people } = openConsoleStore(database);
      for (const name of ['ana', 'bruno', 'carla'])
        await people.add({ name, role: 'approver', passwordHash: 'unused' }, 'test');
      await people.add({ name: 'victor', role: 'viewer', passwordHash: 'unused' }, 'test');
    });
  });
  afterAll(async () => {
    await sandbox.close();
    await test?.drop();
  });

  it('parks a cycle above the limit; two distinct people approve it', async () => {
    const once = await runCommand(['once', '--json', '--slot', '2031-05-01T10:00:00Z'], env);
    expect(once.code).toBe(0);
    expect(JSON.parse(once.stdout).cycles[0]).toMatchObject({
      strategy: NAME,
      outcome: 'awaiting-approval',
      reason: 'approval_required',
      orderId: null,
    });

    const listed = await runCommand(['approvals', '--json'], env);
    expect(listed.code).toBe(0);
    const [parked] = JSON.parse(listed.stdout) as { cycleId: number; approvedBy: string[]; price: string }[];
    expect(parked).toMatchObject({ approversRequired: 2, approvedBy: [], state: 'awaiting_approval' });
    expect(parked!.price).toMatch(/^\d+\.\d+$/);
    const id = String(parked!.cycleId);

    const first = await runCommand(['approve', id], { ...env, TREASURY_ACTOR: 'ana' });
    expect(first).toMatchObject({ code: 0, stdout: `cycle ${id}: approved by ana (1 of 2)\n` });
    const again = await runCommand(['approve', id, '--by', 'ana'], env);
    expect(again.code).toBe(1);
    expect(again.stderr).toBe(
      `treasury-bot: ALREADY_APPROVED_BY_PERSON: ana already approved cycle ${id}: another person must approve it\n`,
    );
    const second = await runCommand(['approve', id, '--by', 'bruno', '--json'], env);
    expect(second.code).toBe(0);
    expect(JSON.parse(second.stdout)).toMatchObject({ state: 'approved', approvedBy: ['ana', 'bruno'] });

    const audit = await runCommand(['audit', '--json'], env);
    const actions = (JSON.parse(audit.stdout) as { actor: string; action: string }[])
      .filter((row) => !row.action.startsWith('user.'))
      .map((row) => `${row.actor} ${row.action}`);
    // The worker applied the strategy's first version when it loaded the file, before anyone approved.
    expect(actions).toEqual([
      'automation strategy.version_applied',
      'ana approval.approve',
      'bruno approval.approve',
    ]);
  });

  it('adds an envelope that its creator cannot approve, lists and revokes it', async () => {
    const add = await runCommand(
      [
        'envelope',
        'add',
        '--strategy',
        NAME,
        '--max-order',
        '200.00',
        '--max-total',
        '1000.00',
        '--from',
        '2031-01-01T00:00:00Z',
        '--until',
        '2031-12-31T00:00:00Z',
        '--by',
        'carla',
        '--json',
      ],
      env,
    );
    expect(add.code).toBe(0);
    const envelope = JSON.parse(add.stdout) as { id: number; approversRequired: number; activeAt: null };
    expect(envelope).toMatchObject({ approversRequired: 2, activeAt: null, maxTotal: '1000' });
    const id = String(envelope.id);
    const own = await runCommand(['envelope', 'approve', id, '--by', 'carla'], env);
    expect(own.stderr).toBe(
      `treasury-bot: APPROVER_IS_REQUESTER: carla created envelope ${id} and cannot approve it: another person must\n`,
    );
    for (const person of ['ana', 'bruno']) {
      expect((await runCommand(['envelope', 'approve', id, '--by', person], env)).code).toBe(0);
    }
    const list = await runCommand(['envelope', 'list', '--json'], env);
    expect(JSON.parse(list.stdout)[0]).toMatchObject({
      id: envelope.id,
      approvedBy: ['ana', 'bruno'],
      room: '1000',
    });
    expect(JSON.parse(list.stdout)[0].activeAt).not.toBeNull();
    const revoke = await runCommand(['envelope', 'revoke', id, '--by', 'ana'], env);
    expect(revoke.stdout).toMatch(new RegExp(`^envelope ${id}: revoked by ana\\n`));
  });

  it('refuses bad arguments with one line on stderr', async () => {
    const window = ['--from', '2031-01-01T00:00:00Z', '--until', '2031-02-01T00:00:00Z'];
    const envelopeAdd = (...extra: string[]) => ['envelope', 'add', '--strategy', NAME, ...extra];
    const cases: [string[], RegExp][] = [
      [
        ['approve', 'abc', '--by', 'ana'],
        /^treasury-bot: INVALID_ARGUMENT: CYCLE_ID must be a positive whole number \(got "abc"\)$/,
      ],
      [
        ['approve', '5'],
        /^treasury-bot: INVALID_ARGUMENT: say who acts: give --by PERSON or set TREASURY_ACTOR$/,
      ],
      [
        ['approve', '5', '--by', 'ana', '--max-price', '-1'],
        /^treasury-bot: INVALID_ARGUMENT: --max-price must be a positive decimal like 2500.00 \(got "-1"\)$/,
      ],
      [['approve', '999999', '--by', 'ana'], /^treasury-bot: CYCLE_NOT_FOUND: no cycle with id 999999$/],
      [['approve', '999999', '--by', 'nobody'], /^treasury-bot: PERSON_UNKNOWN: no person named "nobody": /],
      [['approve', '999999', '--by', 'victor'], /^treasury-bot: PERSON_CANNOT_APPROVE: victor is a viewer: /],
      [
        ['envelope', 'approve', '424242', '--by', 'Automation'],
        /^treasury-bot: PERSON_UNKNOWN: no person named "Automation": /,
      ],
      [
        ['approve', '5', '--by', 'ana b'],
        /^treasury-bot: PERSON_INVALID: the person must be 1 to 64 letters/,
      ],
      [['reject', '5', '--by', 'ana'], /^treasury-bot: INVALID_ARGUMENT: --reason is required$/],
      [['envelope', 'add', '--by', 'carla'], /^treasury-bot: INVALID_ARGUMENT: --strategy is required$/],
      [
        [...envelopeAdd('--max-order', '10', '--max-total', '5', '--by', 'carla'), ...window],
        /^treasury-bot: INVALID_REQUEST: the max total 5 is below the max order 10$/,
      ],
      [
        [...envelopeAdd('--max-order', 'ten', '--max-total', '5', '--by', 'carla'), ...window],
        /^treasury-bot: INVALID_ARGUMENT: --max-order must be a positive decimal/,
      ],
      [
        [
          ...envelopeAdd(
            '--max-order',
            '1',
            '--max-total',
            '5',
            '--by',
            'carla',
            '--from',
            'soon',
            '--until',
            '2031-02-01T00:00:00Z',
          ),
        ],
        /^treasury-bot: INVALID_ARGUMENT: --from must be an ISO 8601 date or date-time \(got "soon"\)$/,
      ],
      [
        [
          ...envelopeAdd(
            '--max-order',
            '1',
            '--max-total',
            '5',
            '--by',
            'carla',
            '--from',
            '2031-02-01T00:00:00Z',
            '--until',
            '2031-01-01T00:00:00Z',
          ),
        ],
        /^treasury-bot: INVALID_REQUEST: the envelope must end after it starts/,
      ],
      [
        [
          'envelope',
          'add',
          '--strategy',
          'nope',
          '--max-order',
          '1',
          '--max-total',
          '5',
          '--by',
          'carla',
          ...window,
        ],
        /^treasury-bot: STRATEGY_NOT_FOUND: no strategy named "nope"/,
      ],
      [
        ['envelope', 'revoke', '424242', '--by', 'ana'],
        /^treasury-bot: ENVELOPE_NOT_FOUND: no envelope with id 424242$/,
      ],
    ];
    // One after another: with embedded PGlite only one process may open the data folder.
    for (const [args, expected] of cases) {
      const result = await runCommand(args, env);
      expect(result.code, args.join(' ')).toBe(1);
      expect(result.stdout, args.join(' ')).toBe('');
      expect(result.stderr.trim().split('\n'), args.join(' ')).toHaveLength(1);
      expect(result.stderr.trim(), args.join(' ')).toMatch(expected);
    }
  });
});
