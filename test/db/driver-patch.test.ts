import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, inject, it } from 'vitest';
import { REPO_ROOT } from '../support/cli.js';

const onPostgres = inject('treasuryDatabase').backend === 'postgres';
if (!onPostgres) {
  process.stderr.write(
    '\n!!! driver-patch.test.ts: the terminated-session probe SKIPPED, it needs a PostgreSQL server\n\n',
  );
}

const run = promisify(execFile);

/**
 * patches/postgres+<version>.patch guards postgres.js against porsager/postgres#1066, #1154 and #1208: a
 * buffered write that fires after the socket closed throws from a setImmediate callback and ends the process.
 * These tests fail when the patch is not applied, or when the installed driver is not the version it is for.
 */
describe('the patched postgres driver', () => {
  const patch = readdirSync(join(REPO_ROOT, 'patches')).find((name) => name.startsWith('postgres+'));

  it('is installed at exactly the version the patch was made for, and an unapplied patch fails the install', () => {
    const manifest = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8'));
    const installed = JSON.parse(readFileSync(join(REPO_ROOT, 'node_modules/postgres/package.json'), 'utf8'));
    expect(patch).toBe(`postgres+${manifest.dependencies.postgres}.patch`);
    expect(installed.version).toBe(manifest.dependencies.postgres);
    expect(manifest.scripts.postinstall).toBe('patch-package --error-on-fail');
  });

  it.skipIf(!onPostgres)('survives the server ending a session in the middle of a transaction', async () => {
    const { adminUrl } = inject('treasuryDatabase');
    const probe = join(REPO_ROOT, 'test/db/support/terminated-transaction.mjs');
    const outcome = await run(process.execPath, [probe, adminUrl as string], { timeout: 30_000 }).then(
      ({ stdout }) => ({ code: 0, stdout }),
      (error: { code: number; stdout: string }) => ({ code: error.code, stdout: error.stdout }),
    );
    // Unpatched, the probe prints "uncaught: Cannot read properties of null (reading 'write')" and exits 2.
    expect(outcome.stdout).not.toContain('uncaught:');
    expect(outcome.stdout).toContain('transaction: CONNECTION_CLOSED');
    expect(outcome.code).toBe(0);
  });
});
