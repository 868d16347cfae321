import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DatabaseError, isConnectionLoss, openMigratedDatabase } from '../../src/db/index.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.js';

describe('isConnectionLoss', () => {
  it.each([
    [
      'postgres.js closed connection',
      Object.assign(new Error('write CONNECTION_CLOSED'), { code: 'CONNECTION_CLOSED' }),
    ],
    [
      'refused socket',
      Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED', errno: -111 }),
    ],
    ['admin shutdown', Object.assign(new Error('terminating'), { code: '57P01', severity: 'FATAL' })],
    ['wrapped', new DatabaseError('DB_MIGRATION_FAILED', 'failed', { cause: { code: 'CONNECTION_ENDED' } })],
    ['unavailable', new DatabaseError('DB_UNAVAILABLE', 'did not answer')],
  ])('waits for %s', (_name, error) => {
    expect(isConnectionLoss(error)).toBe(true);
  });

  it.each([
    ['a refused statement', Object.assign(new Error('syntax'), { code: '42601', severity: 'ERROR' })],
    [
      'a changed migration',
      new DatabaseError('DB_MIGRATION_FAILED', 'migration was changed after it was applied'),
    ],
    ['a plain bug', new TypeError('x is undefined')],
  ])('does not wait for %s', (_name, error) => {
    expect(isConnectionLoss(error)).toBe(false);
  });
});

describe.runIf(process.env.TREASURY_TEST_DB !== 'pglite')('openMigratedDatabase at start', () => {
  let test: TestDatabase;
  let proxy: TcpProxy;
  beforeAll(async () => {
    test = await createTestDatabase();
    const target = test.url ? new URL(test.url) : undefined;
    proxy = await startTcpProxy({
      host: target?.hostname ?? '127.0.0.1',
      port: Number(target?.port || 5432),
    });
  });
  afterAll(async () => {
    await proxy?.close();
    await test?.drop();
  });

  it('waits for a database that is down at start, then opens it', async (context) => {
    if (!test.url) return context.skip('needs a PostgreSQL server');
    proxy.cut();
    const retries: number[] = [];
    const opening = openMigratedDatabase(
      { url: proxy.rewrite(test.url), maxConnections: 1 },
      { waitMs: 20_000, attemptTimeoutMs: 1_000, onRetry: (_error, attempt) => retries.push(attempt) },
    );
    await expect.poll(() => retries.length, { timeout: 15_000 }).toBeGreaterThanOrEqual(1);
    proxy.restore();
    const { database } = await opening;
    await database.ping();
    await database.close();
  });

  it('fails at once without a wait', async (context) => {
    if (!test.url) return context.skip('needs a PostgreSQL server');
    proxy.cut();
    const opening = openMigratedDatabase(
      { url: proxy.rewrite(test.url), maxConnections: 1 },
      { waitMs: 0, attemptTimeoutMs: 1_000 },
    );
    await expect(opening).rejects.toSatisfy(isConnectionLoss);
    proxy.restore();
  });

  it('stops waiting when told to', async (context) => {
    if (!test.url) return context.skip('needs a PostgreSQL server');
    proxy.cut();
    const stop = new AbortController();
    const opening = openMigratedDatabase(
      { url: proxy.rewrite(test.url), maxConnections: 1 },
      { waitMs: 60_000, attemptTimeoutMs: 500, signal: stop.signal, onRetry: () => stop.abort() },
    );
    await expect(opening).rejects.toSatisfy(isConnectionLoss);
    proxy.restore();
  });
});

describe('the attempt bound', () => {
  it('applies to a server, not to embedded PGlite, which has no connection to lose', async () => {
    // CI's Node 24 pass opened and migrated PGlite on disk in more than the 15 s bound on a loaded machine,
    // and the worker's default start (`npm start`) would have failed the same way on a slow one.
    const { database, migration } = await openMigratedDatabase(
      { memory: true },
      { waitMs: 0, attemptTimeoutMs: 1 },
    );
    expect(migration.applied.length).toBeGreaterThan(0);
    await database.close();
  });
});
