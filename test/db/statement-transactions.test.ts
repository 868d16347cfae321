/**
 * Transactions whose statements are built once (src/db/statement-transactions.ts), on both drivers: the
 * statements built on a lent handle run inside the transaction it is lent to and nowhere else.
 */
import { count, sql } from 'drizzle-orm';
import { integer, pgTable } from 'drizzle-orm/pg-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DrizzleHandle } from '../../src/db/connection.js';
import { connectionOf } from '../../src/db/database.js';
import type { StatementTransactions } from '../../src/db/statement-transactions.js';
import { createTestDatabase, type TestDatabase, testBackends } from '../support/database.js';

const scratch = pgTable('lent_scratch', { n: integer('n').notNull() });

function scratchStatements(db: DrizzleHandle) {
  return {
    insert: db
      .insert(scratch)
      .values({ n: sql.placeholder('n') })
      .prepare('lent_scratch_insert'),
    count: db.select({ rows: count() }).from(scratch).prepare('lent_scratch_count'),
  };
}

class Rollback extends Error {}

/** A promise and the function that settles it (Promise.withResolvers, which Node 20 lacks). */
function signal() {
  let resolve: () => void = () => {};
  const promise = new Promise<void>((settle) => {
    resolve = settle;
  });
  return { promise, resolve };
}

describe.each(testBackends())('transactions with statements built once, on %s', (backend) => {
  let test: TestDatabase;
  let builds: number;
  let run: StatementTransactions<DrizzleHandle, ReturnType<typeof scratchStatements>>;
  const committedRows = async () => {
    const [row] = await connectionOf(test.database).drizzle.select({ rows: count() }).from(scratch);
    return row?.rows;
  };

  beforeAll(async () => {
    test = await createTestDatabase(backend);
    const connection = connectionOf(test.database);
    await connection.drizzle.execute(sql`create table lent_scratch (n integer not null)`);
    builds = 0;
    run = connection.statementTransactions((db) => {
      builds += 1;
      return scratchStatements(db);
    });
  });
  afterAll(() => test.drop());

  it('runs the statements inside the transaction: seen there, kept on commit, gone on rollback', async () => {
    const seenInside = await run(async (_tx, statements) => {
      await statements.insert.execute({ n: 1 });
      return (await statements.count.execute())[0]?.rows;
    });
    expect(seenInside).toBe(1);
    expect(await committedRows()).toBe(1);

    const failure = await run(async (tx, statements) => {
      await statements.insert.execute({ n: 2 });
      await tx.insert(scratch).values({ n: 3 });
      throw new Rollback();
    }).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(Rollback);
    expect(await committedRows()).toBe(1);
  });

  it('builds the statements once per connection in use, not once per transaction', async () => {
    const before = builds;
    for (let i = 0; i < 5; i++) await run(async (_tx, statements) => statements.count.execute());
    expect(builds - before).toBeLessThanOrEqual(1);
    // Twenty at once, twice: a handle is taken once the transaction has its connection, so there are never
    // more handles than connections (5 in the test pool, 1 on PGlite), however many transactions wait.
    const burst = () =>
      Promise.all(Array.from({ length: 20 }, () => run(async (_tx, s) => s.count.execute())));
    await burst();
    await burst();
    expect(builds - before).toBeLessThanOrEqual(backend === 'pglite' ? 1 : 5);
  });

  it('refuses a statement on the handle after its transaction ended, and a transaction opened through it', async () => {
    let kept: ReturnType<typeof scratchStatements> | undefined;
    let nested: unknown;
    await run(async (tx, statements) => {
      kept = statements;
      nested = await (async () => tx.transaction(async () => undefined))().catch((error: unknown) => error);
    });
    expect(String(nested)).toMatch(/a transaction handle cannot (begin|transaction)/);
    // drizzle wraps what the client threw ("Failed query: …").
    await expect(kept?.insert.execute({ n: 4 })).rejects.toMatchObject({
      cause: { message: 'a statement ran on a transaction handle outside its transaction' },
    });
    expect(await committedRows()).toBe(1);
  });

  it.runIf(backend === 'postgres')(
    'keeps two transactions in flight apart: each sees its own rows, not the other one',
    async () => {
      const inserted = signal();
      const release = signal();
      const first = run(async (_tx, statements) => {
        await statements.insert.execute({ n: 10 });
        inserted.resolve();
        await release.promise;
        return (await statements.count.execute())[0]?.rows;
      });
      await inserted.promise;
      const second = await run(async (_tx, statements) => {
        await statements.insert.execute({ n: 11 });
        await statements.insert.execute({ n: 12 });
        return (await statements.count.execute())[0]?.rows;
      });
      // The second committed 1 + 2 rows; the first, still open, sees the second's committed rows too (READ
      // COMMITTED) plus its own uncommitted one.
      expect(second).toBe(3);
      release.resolve();
      expect(await first).toBe(4);
      expect(await committedRows()).toBe(4);
    },
  );
});
