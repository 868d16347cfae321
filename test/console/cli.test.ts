import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyPassword } from '../../src/console/passwords.js';
import { openConsoleStore, ROLES } from '../../src/db/index.js';
import { type CommandDatabase, createCommandDatabase } from '../support/database.js';
import { runCommand, startCommand, writeWorkerFiles } from '../support/worker-process.js';

/**
 * `user add|list|passwd|disable` and `audit` as child processes: passwords from a file (never prompted
 * without a terminal), every change in the audit log under TREASURY_ACTOR, bad input refused in one line.
 */
// Each command is a process of its own that opens the database and hashes at full cost: slow on a loaded machine.
describe('user and audit commands', { timeout: 120_000 }, () => {
  let test: CommandDatabase;
  let env: Record<string, string>;
  let folder: string;

  beforeAll(async () => {
    env = { ...(await writeWorkerFiles('', '')), TREASURY_ACTOR: 'carla' };
    folder = join(env.TREASURY_STRATEGIES!, '..');
    await writeFile(join(folder, 'first'), 'first password of twelve\n');
    await writeFile(join(folder, 'second'), 'second password, longer\n');
    await writeFile(join(folder, 'short'), 'short\n');
    test = await createCommandDatabase(env);
  });

  afterAll(async () => {
    await test?.drop();
  });

  it('adds, lists, changes the password of and disables a person, each in the audit log', async () => {
    const add = await runCommand(
      ['user', 'add', 'alice', '--role', 'operator', '--password-file', join(folder, 'first')],
      env,
    );
    expect(add.stderr).toBe('');
    expect(add.stdout).toContain('user alice added as operator');
    const passwd = await runCommand(
      ['user', 'passwd', 'alice', '--password-file', join(folder, 'second')],
      env,
    );
    expect(passwd.code, passwd.stderr).toBe(0);
    const disable = await runCommand(['user', 'disable', 'alice'], env);
    expect(disable.code, disable.stderr).toBe(0);

    const list = await runCommand(['user', 'list', '--json'], env);
    const people = JSON.parse(list.stdout) as { name: string; role: string; disabledAt: string | null }[];
    expect(people).toHaveLength(1);
    expect(people[0]).toMatchObject({ name: 'alice', role: 'operator' });
    expect(people[0]?.disabledAt).not.toBeNull();
    const stored = await test.use((database) => openConsoleStore(database).people.findByName('alice'));
    await expect(verifyPassword('second password, longer', stored!.passwordHash!)).resolves.toBe(true);
    await expect(verifyPassword('first password of twelve', stored!.passwordHash!)).resolves.toBe(false);

    const audit = await runCommand(['audit', '--json'], env);
    const entries = JSON.parse(audit.stdout) as { actor: string; action: string; subject: string }[];
    expect(entries.map((e) => [e.actor, e.action, e.subject])).toEqual([
      ['carla', 'user.add', 'user:alice'],
      ['carla', 'user.password', 'user:alice'],
      ['carla', 'user.disable', 'user:alice'],
    ]);
    expect(audit.stdout).not.toContain('scrypt');
    const later = await runCommand(['audit', '--json', '--since', '2999-01-01T00:00:00Z'], env);
    expect(JSON.parse(later.stdout)).toEqual([]);
  });

  it('records the kill switch flipped from the command line in the audit log', async () => {
    const unnamed = { ...env, TREASURY_ACTOR: '' };
    expect((await runCommand(['pause', '--reason', 'quarter close'], unnamed)).code).toBe(0);
    expect((await runCommand(['resume'], { ...env, TREASURY_ACTOR: 'rita' })).code).toBe(0);
    const audit = await runCommand(['audit', '--json'], env);
    const entries = JSON.parse(audit.stdout) as { actor: string; action: string }[];
    const [pause, resume] = entries.slice(-2);
    expect(pause).toMatchObject({
      action: 'kill_switch.pause',
      after: { paused: true, reason: 'quarter close' },
    });
    // As every command-line change: TREASURY_ACTOR when set (rita below), otherwise cli:<login name>.
    expect(pause?.actor).toMatch(/^cli:/);
    expect(resume).toMatchObject({ actor: 'rita', action: 'kill_switch.resume', after: { paused: false } });
  });

  it('serves the console alone with `console`, and stops on SIGTERM', async () => {
    const running = startCommand(['console'], { ...env, TREASURY_OPS_ADDR: '127.0.0.1:0' });
    try {
      const line = await running.waitForLine('web console listening');
      const { port } = JSON.parse(line) as { port: number };
      const login = await fetch(`http://127.0.0.1:${port}/login`);
      expect(login.status).toBe(200);
      expect(await login.text()).toContain('name="password"');
      const page = await fetch(`http://127.0.0.1:${port}/`, { redirect: 'manual' });
      expect(page.status).toBe(303);
    } finally {
      running.child.kill('SIGTERM');
    }
    expect((await running.exited).code).toBe(0);
  });

  it('limits a person to accounts of the settings with --accounts, refusing an unknown one and an admin', async () => {
    const config = join(folder, 'accounts.yaml');
    await writeFile(config, 'accounts:\n  - name: alpha\n  - name: beta\n');
    const several = { ...env, TREASURY_CONFIG: config };
    const password = ['--password-file', join(folder, 'first')];
    const add = await runCommand(
      ['user', 'add', 'lena', '--role', 'viewer', '--accounts', 'alpha,beta', ...password],
      several,
    );
    expect(add.code, add.stderr).toBe(0);
    expect(add.stdout).toContain('user lena added as viewer, limited to alpha, beta');
    const unknown = await runCommand(
      ['user', 'add', 'luis', '--role', 'viewer', '--accounts', 'alpha,gamma', ...password],
      several,
    );
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(
      /--accounts: no account named "gamma" in the settings \(accounts: alpha, beta\)/,
    );
    const admin = await runCommand(
      ['user', 'add', 'luis', '--role', 'admin', '--accounts', 'alpha', ...password],
      several,
    );
    expect(admin.code).toBe(1);
    expect(admin.stderr).toMatch(/--accounts cannot limit an admin, who sees every account/);

    const table = await runCommand(['user', 'list'], several);
    expect(table.stdout).toMatch(/^lena +viewer +alpha,beta /m);
    const list = await runCommand(['user', 'list', '--json'], several);
    const people = JSON.parse(list.stdout) as { name: string; accounts: string[] | null }[];
    expect(people.find((p) => p.name === 'lena')?.accounts).toEqual(['alpha', 'beta']);
    expect(people.find((p) => p.name === 'alice')?.accounts).toBeNull();
    expect(people.some((p) => p.name === 'luis')).toBe(false);
  });

  it('names every role in the help of user add', async () => {
    // The help spells the roles out (it must not load the database layer to read ROLES).
    const help = await runCommand(['user', 'add', '--help'], env);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(new RegExp(`--role <role> +one of ${ROLES.join(', ')}\n`));
  });

  it.each([
    [
      ['user', 'add', 'bob', '--role', 'owner', '--password-file', 'first'],
      /INVALID_ARGUMENT: --role must be one of viewer, operator, approver, admin \(got "owner"\)/,
    ],
    [
      ['user', 'add', 'bob', '--role', 'viewer', '--password-file', 'short'],
      /PASSWORD_TOO_SHORT: a password needs at least 12 characters/,
    ],
    [
      ['user', 'add', 'bob', '--role', 'viewer'],
      /no terminal to prompt on: give the password with --password-file FILE/,
    ],
    [['user', 'add', 'bob smith', '--role', 'viewer', '--password-file', 'first'], /name "bob smith" is not/],
    [['user', 'disable', 'nobody'], /USER_NOT_FOUND: no console user named "nobody"/],
    [['audit', '--since', 'yesterday'], /--since must be an ISO 8601 instant/],
  ])('refuses %j in one line', async (args, message) => {
    const resolved = args.map((arg) => (['first', 'short'].includes(arg) ? join(folder, arg) : arg));
    const run = await runCommand(resolved, env);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(message);
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
  });
});
