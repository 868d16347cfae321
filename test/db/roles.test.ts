import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { DEMO_TOKEN, type RunningSandbox, startSandbox } from '../../src/sandbox/index.js';
import { ConsoleClient } from '../console/support.js';
import { withDatabase } from '../support/global-setup.js';
import { runCommand, startCommand, writeWorkerFiles } from '../support/worker-process.js';

const STRATEGIES = `name: roles-dca
kind: dca
symbol: USDTBRL
amount: "100.00"
schedule: "*/2 * * * * *"
timezone: UTC
---
name: roles-parked
kind: dca
symbol: USDTBRL
amount: "100.00"
schedule: "0 10 1 1 *"
timezone: UTC
approval:
  required: always
  approvers: 1
  timeout: 2h
`;

const PASSWORD = 'a password of the roles test';

/**
 * The database roles of README "Database roles" on a real server: an owner role that migrates (and grants),
 * and a worker role with only the rights the code uses, under which the worker, the console and every
 * command that touches the database run, and which cannot rewrite the audit log or delete cycles.
 */
describe.runIf(inject('treasuryDatabase').backend === 'postgres')(
  'the owner and worker roles',
  { timeout: 240_000 },
  () => {
    const suffix = `${process.pid}_${randomBytes(4).toString('hex')}`;
    const owner = `tb_owner_${suffix}`;
    const worker = `tb_worker_${suffix}`;
    const name = `tb_roles_${suffix}`;
    let admin: postgres.Sql;
    /** A superuser on the test database, for what only a test does (a cycle made unsure by hand). */
    let superuser: postgres.Sql;
    let sandbox: RunningSandbox;
    let asOwner: Record<string, string>;
    let asWorker: Record<string, string>;
    let folder: string;
    let migrated: { code: number | null; stdout: string; stderr: string };

    const urlOf = (role: string) => {
      const url = new URL(withDatabase(inject('treasuryDatabase').adminUrl!, name));
      url.username = role;
      url.password = PASSWORD;
      return url.toString();
    };

    beforeAll(async () => {
      admin = postgres(inject('treasuryDatabase').adminUrl!, { max: 1, onnotice: () => {} });
      await admin.unsafe(`create role ${owner} login password '${PASSWORD}'`);
      await admin.unsafe(`create role ${worker} login password '${PASSWORD}'`);
      await admin.unsafe(`create database ${name} owner ${owner}`);
      superuser = postgres(withDatabase(inject('treasuryDatabase').adminUrl!, name), {
        max: 1,
        onnotice: () => {},
      });
      sandbox = await startSandbox({ stepMs: 50 });
      const files = await writeWorkerFiles(STRATEGIES, 'engine:\n  reload:\n    watch: false\n');
      folder = join(files.TREASURY_STRATEGIES!, '..');
      await writeFile(join(folder, 'password'), `${PASSWORD}\n`);
      const common = {
        ...files,
        TREASURY_API_URL: sandbox.url,
        TREASURY_API_TOKEN: DEMO_TOKEN,
        TREASURY_ACTOR: 'olga',
        LOG_LEVEL: 'warn',
      };
      asOwner = { ...common, DATABASE_URL: urlOf(owner) };
      asWorker = { ...common, DATABASE_URL: urlOf(worker) };
      migrated = await runCommand(['migrate', '--grant-to', worker, '--json'], asOwner);
    });

    afterAll(async () => {
      await sandbox?.close();
      await superuser?.end({ timeout: 1 });
      await admin.unsafe(`drop database if exists ${name} with (force)`);
      await admin.unsafe(`drop role if exists ${worker}`);
      await admin.unsafe(`drop role if exists ${owner}`);
      await admin.end({ timeout: 1 });
    });

    /** Runs a command as the worker role and expects it to succeed (`codes`: the exits that mean so). */
    async function asWorkerOk(args: string[], codes: number[] = [0], env: Record<string, string> = {}) {
      const run = await runCommand(args, { ...asWorker, ...env });
      expect(codes, `${args.join(' ')} exited ${run.code}: ${run.stderr}`).toContain(run.code);
      expect(run.stderr).not.toMatch(/permission denied/);
      return run;
    }

    it('migrates and grants as the owner, again and again', async () => {
      expect(migrated.code, migrated.stderr).toBe(0);
      expect(JSON.parse(migrated.stdout)).toMatchObject({ backend: 'postgres', grantedTo: worker });
      const again = await runCommand(['migrate', '--grant-to', worker, '--json'], asOwner);
      expect(JSON.parse(again.stdout)).toEqual({ backend: 'postgres', applied: [], grantedTo: worker });
      const refused = await runCommand(['migrate', '--grant-to', owner], asOwner);
      expect(refused.stderr).toMatch(/the role migrating: the worker must run as a role of its own/);
    });

    it('runs `once` and every approval and operator command as the worker', async () => {
      // Approvals are given by people of the people table (issue 33), added as the worker too.
      const passwordFile = join(folder, 'password');
      await asWorkerOk(['user', 'add', 'ana', '--role', 'approver', '--password-file', passwordFile]);
      await asWorkerOk(['user', 'add', 'carla', '--role', 'approver', '--password-file', passwordFile]);
      const once = await asWorkerOk(['once', '--json', '--slot', '2031-05-01T10:00:00Z']);
      const cycles = JSON.parse(once.stdout).cycles as {
        strategy: string;
        outcome: string;
        cycleId: number;
      }[];
      expect(cycles.map((cycle) => [cycle.strategy, cycle.outcome]).sort()).toEqual([
        ['roles-dca', 'placed'],
        ['roles-parked', 'awaiting-approval'],
      ]);
      const [parked] = JSON.parse((await asWorkerOk(['approvals', '--json'])).stdout) as {
        cycleId: number;
      }[];
      await asWorkerOk(['approve', String(parked!.cycleId), '--by', 'ana']);
      await asWorkerOk(['once', '--json', '--strategy', 'roles-parked', '--slot', '2031-06-01T10:00:00Z']);
      const [second] = JSON.parse((await asWorkerOk(['approvals', '--json'])).stdout) as {
        cycleId: number;
      }[];
      await asWorkerOk(['reject', String(second!.cycleId), '--by', 'ana', '--reason', 'not this month']);

      const envelope = await asWorkerOk([
        ...[
          'envelope',
          'add',
          '--strategy',
          'roles-parked',
          '--max-order',
          '200.00',
          '--max-total',
          '1000.00',
        ],
        ...['--from', '2031-01-01T00:00:00Z', '--until', '2031-12-31T00:00:00Z', '--by', 'carla', '--json'],
      ]);
      const { id } = JSON.parse(envelope.stdout) as { id: number };
      await asWorkerOk(['envelope', 'approve', String(id), '--by', 'ana']);
      await asWorkerOk(['envelope', 'list', '--json']);
      await asWorkerOk(['envelope', 'revoke', String(id), '--by', 'ana']);

      await asWorkerOk(['pause', '--reason', 'roles test']);
      await asWorkerOk(['resume']);
      await asWorkerOk(['status', '--json']);
      await asWorkerOk(['reconcile', '--json']);
      // A cycle left unsure (as by a crash mid-order), settled by hand; then the strategy's halt lifted.
      // The state machine's trigger refuses that move: replication mode skips it, for this setup only.
      await superuser.begin(async (sql) => {
        await sql`set local session_replication_role = replica`;
        await sql`update cycles set state = 'unsure' where id = ${second!.cycleId}`;
      });
      await asWorkerOk(['resolve', String(second!.cycleId), '--not-placed', '--by', 'ana']);
      await asWorkerOk(['unhalt', 'roles-parked']);
      await asWorkerOk(['strategy', 'versions', 'roles-dca', '--json']);
      await asWorkerOk(['strategy', 'diff', 'roles-dca', '--version', '1']);
      // A governed change: recorded waiting by `once`, approved by another person.
      const governed = { TREASURY_STRATEGY_CHANGES: 'approve' };
      await writeFile(asWorker.TREASURY_STRATEGIES!, STRATEGIES.replace('"100.00"', '"150.00"'));
      await asWorkerOk(['once', '--strategy', 'roles-dca', '--slot', '2031-07-01T10:00:00Z'], [0], governed);
      await asWorkerOk(['strategy', 'approve', 'roles-dca', '--version', '2', '--by', 'ana'], [0], governed);
      await asWorkerOk(['notifications', '--json']);
      await asWorkerOk(['report', '--from', '2031-05-01', '--to', '2031-05-02', '--format', 'json']);
      await asWorkerOk([
        'export',
        'orders',
        '--from',
        '2031-05-01',
        '--to',
        '2031-05-02',
        '--format',
        'json',
      ]);
      await asWorkerOk(['reconcile-report', '--from', '2031-05-01', '--to', '2031-05-02', '--json'], [0, 3]);
    });

    it('runs the people commands and `audit` as the worker', async () => {
      const passwordFile = join(folder, 'password');
      await asWorkerOk(['user', 'add', 'dora', '--role', 'admin', '--password-file', passwordFile]);
      await asWorkerOk(['user', 'add', 'bia', '--role', 'viewer', '--password-file', passwordFile]);
      await asWorkerOk(['user', 'passwd', 'bia', '--password-file', passwordFile]);
      await asWorkerOk(['user', 'disable', 'bia']);
      await asWorkerOk(['user', 'totp', 'enroll', 'dora']);
      await asWorkerOk(['user', 'totp', 'reset', 'dora']);
      await asWorkerOk(['user', 'list', '--json']);
      await asWorkerOk(['token', 'add', 'roles-bot', '--role', 'viewer', '--expires', '1d']);
      await asWorkerOk(['token', 'list', '--json']);
      await asWorkerOk(['token', 'revoke', 'roles-bot']);
      const audit = await asWorkerOk(['audit', '--json']);
      expect((JSON.parse(audit.stdout) as { action: string }[]).map((row) => row.action)).toContain(
        'user.add',
      );
    });

    it('serves the console and the REST API as the worker: a login, a page, a read and an idempotent act', async () => {
      const added = await asWorkerOk(['token', 'add', 'roles-operator', '--role', 'operator', '--json']);
      const { token } = JSON.parse(added.stdout) as { token: string };
      const running = startCommand(['console'], {
        ...asWorker,
        TREASURY_OPS_ADDR: '127.0.0.1:0',
        LOG_LEVEL: 'info',
      });
      try {
        const { port } = JSON.parse(await running.waitForLine('web console listening')) as { port: number };
        const browser = new ConsoleClient(`http://127.0.0.1:${port}`);
        expect((await browser.login('ana', PASSWORD)).status).toBe(303);
        const overview = await browser.get('/');
        expect(overview.status).toBe(200);
        expect(overview.body).toContain('roles-dca');
        const api = `http://127.0.0.1:${port}/api/v1`;
        const authorization = `Bearer ${token}`;
        expect((await fetch(`${api}/status`, { headers: { authorization } })).status).toBe(200);
        for (const key of ['roles-1', 'roles-1']) {
          const paused = await fetch(`${api}/kill-switch/pause`, {
            method: 'POST',
            headers: { authorization, 'content-type': 'application/json', 'idempotency-key': key },
            body: JSON.stringify({ reason: 'roles test' }),
          });
          expect(paused.status).toBe(200);
        }
        const resumed = await fetch(`${api}/kill-switch/resume`, {
          method: 'POST',
          headers: { authorization },
        });
        expect(resumed.status).toBe(200);
      } finally {
        running.child.kill('SIGTERM');
      }
      expect((await running.exited).code).toBe(0);
    });

    it('runs the worker as the worker role: it buys, tracks and leaves the replicas table on stop', async () => {
      const running = startCommand(['run'], {
        ...asWorker,
        TREASURY_OPS_ADDR: '127.0.0.1:0',
        LOG_LEVEL: 'info',
      });
      try {
        await running.waitForLine('worker started');
        await running.waitForLine('cycle placed');
        await running.waitForLine('settlement changed');
      } finally {
        running.child.kill('SIGTERM');
      }
      const exit = await running.exited;
      expect(exit.code, running.lines.slice(-10).join('\n')).toBe(0);
      expect(running.lines.join('\n')).not.toMatch(/permission denied/);
      // Its stop deleted its row of `replicas`, the one table the worker deletes from.
      expect(await superuser`select count(*)::int as n from replicas`).toEqual([{ n: 0 }]);
    });

    it('refuses the worker role a change to the audit log and a deleted cycle', async () => {
      const sql = postgres(urlOf(worker), { max: 1, onnotice: () => {} });
      try {
        for (const statement of [
          `update audit_log set actor = 'mallory'`,
          'delete from audit_log',
          'truncate audit_log',
          'delete from cycles',
          'alter table audit_log disable trigger all',
        ]) {
          await expect(sql.unsafe(statement), statement).rejects.toThrow(/permission denied|must be owner/);
        }
      } finally {
        await sql.end({ timeout: 1 });
      }
    });

    it('refuses, without changing anything, a database one migration behind', async () => {
      const sql = postgres(urlOf(owner), { max: 1, onnotice: () => {} });
      try {
        const [last] = await sql`delete from drizzle.__drizzle_migrations
          where id = (select max(id) from drizzle.__drizzle_migrations) returning id`;
        expect(last).toBeDefined();
      } finally {
        await sql.end({ timeout: 1 });
      }
      for (const args of [['status'], ['once', '--strategy', 'roles-dca']]) {
        const refused = await runCommand(args, asWorker);
        expect(refused.code).toBe(1);
        expect(refused.stderr).toMatch(
          /^treasury-bot: DB_SCHEMA_BEHIND: the database lacks migration \S+ that this version needs: run `treasury-bot migrate` as the database's owner role\n$/,
        );
      }
    });
  },
);
