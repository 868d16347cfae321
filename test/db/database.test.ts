import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { buildProgram } from '../../src/cli/program.js';
import { openDatabase, openMigratedDatabase } from '../../src/db/index.js';
import { createTestDatabase, type TestDatabase, testBackends } from '../support/database.js';
import { MIGRATION_TAGS } from './support/migrations.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function testDatabase(...args: Parameters<typeof createTestDatabase>): Promise<TestDatabase> {
  const test = await createTestDatabase(...args);
  cleanups.push(() => test.drop());
  return test;
}

describe.each(testBackends())('database lifecycle on %s', (backend) => {
  it('answers ping, closes idempotently, and reports use after close as unavailable', async () => {
    const { database } = await testDatabase(backend);
    expect(database.kind).toBe(backend);
    await database.ping();
    await Promise.all([database.close(), database.close()]);
    await database.close();
    await expect(database.ping()).rejects.toMatchObject({ code: 'DB_UNAVAILABLE' });
  });
});

describe('PostgreSQL specifics', () => {
  const postgresOnly = testBackends().includes('postgres') ? it : it.skip;

  postgresOnly('holds a session advisory lock on one reserved connection', async () => {
    const { database } = await testDatabase('postgres');
    const lock = 'select pg_try_advisory_lock(hashtext($1)) as locked';
    await database.withReservedConnection(async (holder) => {
      expect((await holder.query(lock, ['reconcile']))[0]).toEqual({ locked: true });
      await database.withReservedConnection(async (other) => {
        expect((await other.query(lock, ['reconcile']))[0]).toEqual({ locked: false });
      });
      await holder.query('select pg_advisory_unlock(hashtext($1))', ['reconcile']);
    });
    await database.withReservedConnection(async (other) => {
      expect((await other.query(lock, ['reconcile']))[0]).toEqual({ locked: true });
      await other.query('select pg_advisory_unlock(hashtext($1))', ['reconcile']);
    });
  });

  it('reports an unreachable server as DB_UNAVAILABLE without the password', async () => {
    const database = await openDatabase({ url: 'postgres://bot:hunter2-secret@127.0.0.1:1/treasury' });
    cleanups.push(() => database.close());
    const failure = await openMigratedDatabase({
      url: 'postgres://bot:hunter2-secret@127.0.0.1:1/treasury',
    }).catch((error: unknown) => error);
    expect(failure).toMatchObject({
      code: 'DB_UNAVAILABLE',
      message: expect.stringContaining('127.0.0.1:1/treasury'),
    });
    expect(String((failure as Error).message)).not.toContain('hunter2');
    await expect(database.ping()).rejects.toMatchObject({ code: 'DB_UNAVAILABLE' });
  });

  postgresOnly('`treasury-bot migrate` migrates the database named by DATABASE_URL', async () => {
    const test = await testDatabase('postgres', { empty: true });
    const written: string[] = [];
    const spy = vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => {
      written.push(String(chunk));
      return true;
    });
    vi.stubEnv('DATABASE_URL', test.url!);
    try {
      await buildProgram().parseAsync(['node', 'treasury-bot', 'migrate', '--json']);
      await buildProgram().parseAsync(['node', 'treasury-bot', 'migrate', '--json']);
    } finally {
      spy.mockRestore();
      vi.unstubAllEnvs();
    }
    expect(written.map((line) => JSON.parse(line))).toEqual([
      {
        backend: 'postgres',
        applied: [...MIGRATION_TAGS],
      },
      { backend: 'postgres', applied: [] },
    ]);
    expect(process.exitCode ?? 0).toBe(0);
  });
});

describe('embedded PGlite on disk', () => {
  it('keeps its data under TREASURY_DATA_DIR across restarts', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'treasury-data-'));
    cleanups.push(() => rm(dataDir, { recursive: true, force: true }));

    const first = await openMigratedDatabase({ dataDir });
    expect(first.migration.applied).toEqual([...MIGRATION_TAGS]);
    await first.database.control.pause('maintenance', 'test');
    await first.database.close();

    const second = await openMigratedDatabase({ dataDir });
    cleanups.push(() => second.database.close());
    expect(second.migration.applied).toEqual([]);
    expect(await second.database.control.get()).toMatchObject({ paused: true, reason: 'maintenance' });
  });
});
