import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createPurchaseClient, type PurchaseClient } from '../../src/api/index.js';
import { EVERY_ACCOUNT } from '../../src/db/index.js';
import { Maintenance } from '../../src/engine/index.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { type EngineBench, onClient, startEngineBench } from './support/harness.js';

const onPostgres = inject('treasuryDatabase').backend === 'postgres';
if (!onPostgres) {
  process.stderr.write(
    '\n!!! scan-session-loss.test.ts SKIPPED: it terminates a server session and needs PostgreSQL\n\n',
  );
}

/** Fails the test instead of letting it hang: the defect under test is a promise that never settles. */
function within<T>(ms: number, what: string, work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not settle within ${ms} ms`)), ms);
  });
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
}

/**
 * The external-order scan holds its advisory lock on one connection while it lists orders. A session the
 * server ends meanwhile (pg_terminate_backend, a failover) must fail that step, not leave the pass waiting
 * for ever: the worker's graceful stop waits for the pass, and a replica in the fault suite once did not
 * exit after SIGTERM. The pool must keep serving afterwards.
 */
describe.skipIf(!onPostgres)('external scan when the server ends the lock session', () => {
  let test: TestDatabase;
  let bench: EngineBench;
  let admin: postgres.Sql;
  let service: Awaited<ReturnType<typeof startTerminatingService>>;
  let client: PurchaseClient;

  beforeAll(async () => {
    test = await createTestDatabase('postgres');
    bench = await startEngineBench({ test });
    admin = postgres(test.url!, { max: 1, onnotice: () => {} });
    service = await startTerminatingService(admin);
    client = createPurchaseClient({ baseUrl: service.url, token: 'stand-in-token' });
  });
  afterAll(async () => {
    await client.close();
    await service.close();
    await admin.end({ timeout: 1 });
    await bench.close();
    await test.drop();
  });

  it('fails the scan step, lets the pass and the stop end, and the pool keeps working', async () => {
    const maintenance = new Maintenance(onClient(bench.context, client));
    const report = await within(10_000, 'the maintenance pass', maintenance.runOnce());
    expect(service.terminated()).toBeGreaterThan(0);
    expect(report.errors.some((error) => error.startsWith('external default:'))).toBe(true);
    await within(2_000, 'the maintenance stop', maintenance.stop());
    for (let query = 0; query < 8; query++) {
      await within(
        5_000,
        'a pool query after the lost session',
        bench.database.cycles.listRecent(EVERY_ACCOUNT, { limit: 1 }),
      );
    }
  });
});

/**
 * A stand-in purchase service whose order list first ends the session holding an advisory lock in the
 * test database (the scan's), then answers with an empty page.
 */
async function startTerminatingService(admin: postgres.Sql) {
  let terminated = 0;
  const server = createServer((request, response) => {
    if (!(request.url ?? '').startsWith('/client/orders')) {
      response.writeHead(404, { 'content-type': 'application/json' }).end('{"message":"not found"}');
      return;
    }
    void admin<{ ended: boolean }[]>`
      select pg_terminate_backend(pid) as ended from pg_locks
      where locktype = 'advisory' and granted and pid <> pg_backend_pid()
        and database = (select oid from pg_database where datname = current_database())`.then((rows) => {
      terminated += rows.filter((row) => row.ended).length;
      const page = { data: [], pagination: { page: 1, limit: 100, total: 0, totalPages: 1 } };
      response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(page));
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    terminated: () => terminated,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
