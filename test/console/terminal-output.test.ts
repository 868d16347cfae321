import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openConsoleStore } from '../../src/db/index.js';
import { type CommandDatabase, createCommandDatabase } from '../support/database.js';
import { runCommand, writeWorkerFiles } from '../support/worker-process.js';

/**
 * What `audit` prints at a terminal cannot be steered by the texts it shows: rows written before names were
 * checked (a refused login stored its raw name) may hold a line break or an escape sequence; printed, they
 * are escaped, so no forged line appears and no sequence reaches the terminal.
 */
describe('text printed at the terminal', { timeout: 120_000 }, () => {
  let test: CommandDatabase;
  let env: Record<string, string>;

  beforeAll(async () => {
    env = { ...(await writeWorkerFiles('', '')), TREASURY_ACTOR: 'carla' };
    test = await createCommandDatabase(env);
    await test.use(async (database) => {
      const store = openConsoleStore(database, () => new Date('2026-11-01T10:00:00Z'));
      await store.audit.append({
        actor: 'eve\n2026-11-01T09:00:00.000Z  ana    approval.approve  cycle:7',
        action: 'reconcile.run',
        subject: 'user:\u001b[1A\u001b[2K\rerased',
      });
    });
  });
  afterAll(async () => {
    await test?.drop();
  });

  it('escapes line breaks and escape sequences in `audit`, so no line is forged', async () => {
    const audit = await runCommand(['audit'], env);
    expect(audit.stderr).toBe('');
    const lines = audit.stdout.trimEnd().split('\n');
    expect(lines).toHaveLength(2);
    expect(lines.some((line) => /^\S+\s+ana\s+approval\.approve/.test(line))).toBe(false);
    expect(audit.stdout).not.toContain('\u001b');
    expect(audit.stdout).not.toContain('\r');
    expect(lines[1]).toContain('eve\\n2026-11-01T09:00:00.000Z');
    expect(lines[1]).toContain('user:\\u001b[1A\\u001b[2K\\rerased');
  });
});
