import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectionOf } from '../../src/db/database.js';
import { CYCLE_STATES, type CycleState, isFinalState, isLegalTransition } from '../../src/db/index.js';
import { REPO_ROOT } from '../support/cli.js';
import { createTestDatabase, type TestDatabase, testBackends } from '../support/database.js';

// The moves the issue allows, written out independently of the implementation's table.
const ALLOWED = new Set([
  'claimed>quoted',
  'claimed>submitting',
  'claimed>skipped',
  'claimed>failed',
  'quoted>submitting',
  'quoted>skipped',
  'quoted>failed',
  'quoted>dry_run',
  'submitting>placed',
  'submitting>failed',
  'submitting>unsure',
  'submitting>quoted',
  'unsure>placed',
  'unsure>not_placed',
  'claimed>awaiting_approval',
  'quoted>awaiting_approval',
  'awaiting_approval>approved',
  'awaiting_approval>rejected',
  'awaiting_approval>approval_expired',
  'approved>claimed',
  'approved>approval_expired',
  'approved>awaiting_approval',
]);

describe('cycle state machine', () => {
  it('allows exactly the listed moves among all pairs', () => {
    const allowed: string[] = [];
    for (const from of CYCLE_STATES) {
      for (const to of CYCLE_STATES) if (isLegalTransition(from, to)) allowed.push(`${from}>${to}`);
    }
    expect(allowed.sort()).toEqual([...ALLOWED].sort());
  });

  it('treats every state without a way out as final', () => {
    const final = CYCLE_STATES.filter((state: CycleState) => isFinalState(state));
    expect(final.sort()).toEqual([
      'approval_expired',
      'dry_run',
      'failed',
      'not_placed',
      'placed',
      'rejected',
      'skipped',
    ]);
  });
});

/**
 * The database enforces the same table, so that no statement (one written later, a hand-run UPDATE) can make a
 * move the table lacks, and every transition the suite's scenarios perform is checked against it.
 */
describe('the database holds cycles to the same moves', () => {
  it('allows exactly the table’s states in its check constraint', () => {
    const migrations = readdirSync(join(REPO_ROOT, 'drizzle'))
      .filter((name) => name.endsWith('.sql'))
      .map((name) => readFileSync(join(REPO_ROOT, 'drizzle', name), 'utf8'))
      .join('\n');
    const checks = [
      ...migrations.matchAll(/"cycles_state_check" CHECK \("cycles"\."state" in \(([^)]*)\)\)/g),
    ];
    const latest = checks.at(-1)?.[1] ?? '';
    expect([...latest.matchAll(/'([a-z_]+)'/g)].map(([, state]) => state).sort()).toEqual(
      [...CYCLE_STATES].sort(),
    );
  });

  it('has exactly the table’s pairs in its trigger (the latest definition of its function)', () => {
    const definitions = readdirSync(join(REPO_ROOT, 'drizzle'))
      .filter((name) => name.endsWith('.sql'))
      .sort()
      .map((name) => readFileSync(join(REPO_ROOT, 'drizzle', name), 'utf8'))
      .flatMap((text) => text.split('--> statement-breakpoint'))
      .filter((statement) => /FUNCTION cycles_legal_move\(\)/.test(statement));
    const migration = definitions.at(-1) ?? '';
    const pairs = [...migration.matchAll(/\('([a-z_]+)', '([a-z_]+)'\)/g)].map(
      ([, from, to]) => `${from}>${to}`,
    );
    const table: string[] = [];
    for (const from of CYCLE_STATES) {
      for (const to of CYCLE_STATES) if (isLegalTransition(from, to)) table.push(`${from}>${to}`);
    }
    expect(pairs.sort()).toEqual(table.sort());
  });

  describe.each(testBackends())('on %s', (backend) => {
    let test: TestDatabase;
    beforeAll(async () => {
      test = await createTestDatabase(backend);
    });
    afterAll(() => test.drop());

    it('refuses a move outside the table and allows one inside it', async () => {
      const { database } = test;
      await database.strategies.upsertSeen([
        { name: 'moves', account: 'default', kind: 'dca', config: {}, hash: 'h' },
      ]);
      const cycle = await database.cycles.claimSlot({
        account: 'default',
        strategy: 'moves',
        slot: new Date('2031-01-01T00:00:00Z'),
        trigger: 'once',
        owner: 'r1',
      });
      const { drizzle } = connectionOf(database);
      // drizzle wraps the server's error ("Failed query: …") and keeps it as the cause.
      const move = (to: string) =>
        drizzle.execute(sql`update cycles set state = ${to} where id = ${cycle!.id}`).then(
          () => 'moved',
          (error: Error) => String((error.cause as Error | undefined)?.message ?? error.message),
        );
      expect(await move('placed')).toMatch(/illegal cycle move claimed -> placed/);
      expect(await move('skipped')).toBe('moved');
      expect(await move('claimed')).toMatch(/illegal cycle move skipped -> claimed/);
    });
  });
});
