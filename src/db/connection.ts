/**
 * The two drivers behind one shape: postgres.js against a PostgreSQL server (here), or PGlite (PostgreSQL
 * in WebAssembly, one connection) embedded in the process (pglite-connection.ts). Repositories only see
 * the drizzle handle, so the same statements run on both.
 */
import { type AnyColumn, type SQL, sql } from 'drizzle-orm';
import type { PgDatabase, PgQueryResultHKT, PgTransaction } from 'drizzle-orm/pg-core';
import { drizzle as drizzlePostgres } from 'drizzle-orm/postgres-js';
import postgres from 'postgres';
import { DatabaseError } from './errors.js';
import * as schema from './schema.js';
import {
  lendingClient,
  type StatementTransactions,
  statementTransactions,
} from './statement-transactions.js';

export type Schema = typeof schema;
export type DrizzleHandle = PgDatabase<PgQueryResultHKT, Schema>;
export type DrizzleTransaction = PgTransaction<PgQueryResultHKT, Schema>;
export type DrizzleExecutor = DrizzleHandle | DrizzleTransaction;

export type DatabaseKind = 'postgres' | 'pglite';

/**
 * A few statements on one session, e.g. a session advisory lock and the work it guards. Once the session is
 * lost, every later statement fails rather than run on a new session that lacks the caller's locks.
 */
export interface ReservedConnection {
  query(text: string, params?: unknown[]): Promise<Record<string, unknown>[]>;
}

export interface Connection {
  readonly kind: DatabaseKind;
  readonly drizzle: DrizzleHandle;
  withReservedConnection<T>(work: (connection: ReservedConnection) => Promise<T>): Promise<T>;
  /** Transactions whose statements `build` makes once, not once per transaction (statement-transactions.ts). */
  statementTransactions<S>(build: (db: DrizzleHandle) => S): StatementTransactions<DrizzleHandle, S>;
  ping(): Promise<void>;
  end(): Promise<void>;
}

const POSTGRES_OPTIONS = {
  connect_timeout: 10,
  // Notices such as "relation already exists, skipping" are expected noise from idempotent DDL.
  onnotice: () => {},
  connection: { application_name: 'treasury-bot' },
};

export function connectPostgres(url: string, maxConnections: number): Connection {
  const target = describeTarget(url);
  const client = postgres(url, { ...POSTGRES_OPTIONS, max: maxConnections, idle_timeout: 60 });
  return {
    kind: 'postgres',
    drizzle: drizzlePostgres(client, { schema }),
    withReservedConnection: (work) => withOwnSession(url, target, work),
    statementTransactions: (build) =>
      statementTransactions(
        {
          // postgres.js types the answer as its own unwrapping of T; `work` answers T itself.
          begin: <T>(work: (tx: postgres.TransactionSql) => Promise<T>) => client.begin(work) as Promise<T>,
          // Every statement drizzle sends goes through `unsafe`.
          handle: (lent) =>
            drizzlePostgres(lendingClient(client, lent, 'unsafe', ['begin', 'reserve']), { schema }),
        },
        build,
      ),
    async ping() {
      try {
        await client`select 1`;
      } catch (error) {
        throw new DatabaseError(
          'DB_UNAVAILABLE',
          `PostgreSQL at ${target} did not answer: ${reasonOf(error)}`,
          {
            cause: error,
          },
        );
      }
    },
    end: () => client.end({ timeout: 5 }),
  };
}

/**
 * Runs `work` on a one-connection client of its own rather than on client.reserve(): postgres.js never
 * settles a statement sent on a reserved connection whose session the server ended, and release() then
 * hands the dead connection back to the pool, whose next statements on it never settle either
 * (porsager/postgres#1199). The worker's stop waits for the maintenance pass holding such a statement, so
 * the worker never exited. A private client fails the statement in flight and shares nothing with the pool.
 */
async function withOwnSession<T>(
  url: string,
  target: string,
  work: (connection: ReservedConnection) => Promise<T>,
): Promise<T> {
  let lost = false;
  const session = postgres(url, {
    ...POSTGRES_OPTIONS,
    max: 1,
    // No idle timeout: the session must outlive the caller's pauses, or its locks would go with it. The
    // array-type lookup is skipped: these statements take and return plain values.
    idle_timeout: 0,
    fetch_types: false,
    onclose: () => {
      lost = true;
    },
  });
  try {
    return await work({
      async query(text, params = []) {
        if (lost) {
          throw new DatabaseError('DB_UNAVAILABLE', `the session with PostgreSQL at ${target} ended`);
        }
        return [...(await session.unsafe(text, params as never[]))];
      },
    });
  } finally {
    await session.end({ timeout: 1 });
  }
}

/**
 * A named placeholder of a prepared statement whose value goes through the column's encoder (money as
 * text, instants as ISO text), where a plain placeholder would not be encoded: in an UPDATE's SET list or
 * inside a `sql` template.
 */
export function encodedPlaceholder(column: AnyColumn, name: string): SQL {
  return sql`${sql.param(sql.placeholder(name), column)}`;
}

/**
 * The rows of `executor.execute(sql…)`, whichever driver answered: postgres.js answers an array of rows,
 * PGlite an object holding them.
 */
export function rowsOf(result: unknown): Record<string, unknown>[] {
  if (Array.isArray(result)) return result;
  if (result !== null && typeof result === 'object' && 'rows' in result && Array.isArray(result.rows)) {
    return result.rows;
  }
  throw new TypeError('the driver answered a statement with neither rows nor an array of them');
}

/** host:port/database, without user or password, for messages. */
export function describeTarget(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.hostname}${parsed.port ? `:${parsed.port}` : ''}${parsed.pathname}`;
  } catch {
    return '(unparseable DATABASE_URL)';
  }
}

export function reasonOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
