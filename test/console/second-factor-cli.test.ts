import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Secret, TOTP } from 'otpauth';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CommandDatabase, createCommandDatabase } from '../support/database.js';
import { runCommand, writeWorkerFiles } from '../support/worker-process.js';

/**
 * `user totp enroll|confirm|reset` as child processes: the otpauth address, a QR code and the recovery codes
 * printed once on stdout, a wrong code refused in one line, confirmation, a second enrolment refused while
 * one is active, the admin's reset, each in the audit log under TREASURY_ACTOR and none with the secret.
 */
describe('user totp commands', { timeout: 120_000 }, () => {
  let test: CommandDatabase;
  let env: Record<string, string>;

  beforeAll(async () => {
    env = { ...(await writeWorkerFiles('', '')), TREASURY_ACTOR: 'carla' };
    const folder = join(env.TREASURY_STRATEGIES!, '..');
    await writeFile(join(folder, 'password'), 'a password of some length\n');
    test = await createCommandDatabase(env);
    const add = await runCommand(
      ['user', 'add', 'alice', '--role', 'operator', '--password-file', join(folder, 'password')],
      env,
    );
    expect(add.code, add.stderr).toBe(0);
  });

  afterAll(async () => {
    await test?.drop();
  });

  it('enrols, confirms with a code, refuses a second enrolment, and resets, each audited', async () => {
    const enrol = await runCommand(['user', 'totp', 'enroll', 'alice'], env);
    expect(enrol.code, enrol.stderr).toBe(0);
    const secret = /otpauth:\/\/totp\/treasury-bot:alice\?\S*secret=([A-Z2-7]+)/.exec(enrol.stdout)?.[1];
    expect(secret).toBeDefined();
    // The QR code, drawn with half blocks, and ten recovery codes.
    expect(enrol.stdout).toMatch(/[▄▀█]{7}/);
    expect(enrol.stdout.match(/^ {2}[A-Z2-7]{4}(-[A-Z2-7]{4}){3}$/gm)).toHaveLength(10);
    expect(enrol.stderr).not.toContain(secret);

    const wrong = await runCommand(['user', 'totp', 'confirm', 'alice', '--code', '000000'], env);
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toMatch(/INVALID_ARGUMENT: --code is not the current code/);
    expect(wrong.stderr.trim().split('\n')).toHaveLength(1);
    const code = TOTP.generate({ secret: Secret.fromBase32(secret!) });
    const confirm = await runCommand(['user', 'totp', 'confirm', 'alice', '--code', code], env);
    expect(confirm.code, confirm.stderr).toBe(0);
    expect(confirm.stdout).toContain('second factor of alice confirmed');

    const again = await runCommand(['user', 'totp', 'enroll', 'alice'], env);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/TOTP_ACTIVE: alice already has an active second factor: reset it first/);
    expect(again.stdout).not.toContain('otpauth://');

    const reset = await runCommand(['user', 'totp', 'reset', 'alice'], env);
    expect(reset.code, reset.stderr).toBe(0);
    const twice = await runCommand(['user', 'totp', 'reset', 'alice'], env);
    expect(twice.stderr).toMatch(/TOTP_NOT_ENROLLED: alice has no second factor to reset/);

    const audit = await runCommand(['audit', '--json'], env);
    const entries = JSON.parse(audit.stdout) as { actor: string; action: string; subject: string }[];
    expect(entries.filter((e) => e.action.startsWith('user.totp')).map((e) => [e.actor, e.action])).toEqual([
      ['carla', 'user.totp_enrol'],
      ['carla', 'user.totp_confirm'],
      ['carla', 'user.totp_reset'],
    ]);
    expect(audit.stdout).not.toContain(secret);
  });

  it('refuses an unknown person in one line', async () => {
    const run = await runCommand(['user', 'totp', 'enroll', 'nobody'], env);
    expect(run.code).toBe(1);
    expect(run.stderr.trim()).toMatch(/^.*USER_NOT_FOUND: no console user named "nobody"$/);
  });
});
