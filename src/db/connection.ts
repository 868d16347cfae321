/**
 * The two drivers behind one shape: postgres.js against a PostgreSQL server, or PGlite (PostgreSQL in
 * WebAssembly, one connection) embedded in the process. Repositories only see the drizzle handle, so the
 * same statements run on both.
 */
import { mkdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import type { PgDatabase, PgQueryResultHKT, PgTransaction } from 'drizzle-orm/pg-core';
import { drizzle as drizzlePglite } from 'drizzle-orm/pglite';
import { drizzle as drizzlePostgres } from 'drizzle-orm/postgres-js';
import postgres from 'postgres';
import { DatabaseError } from './errors.js';
import * as schema from './schema.js';

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

export async function connectPglite(options: { dataDir?: string; memory?: boolean }): Promise<Connection> {
  let location = 'memory';
  let client: PGlite;
  try {
    if (options.memory) {
      client = await PGlite.create();
    } else {
      const directory = join(resolve(options.dataDir ?? './data'), 'pglite');
      location = directory;
      await mkdir(directory, { recursive: true });
      client = await PGlite.create({ dataDir: directory });
    }
  } catch (error) {
    throw new DatabaseError(
      'DB_UNAVAILABLE',
      `embedded database (PGlite) at ${location} could not start: ${reasonOf(error)}`,
      {
        cause: error,
      },
    );
  }
  return wrapPglite(client);
}

/**
 * PGlite is one session: a reserved connection is the session itself, and an advisory lock taken there is
 * re-entrant for every caller in this process. That is enough, since a PGlite data directory can only be
 * opened by one process at a time.
 */
export function wrapPglite(client: PGlite): Connection {
  return {
    kind: 'pglite',
    drizzle: drizzlePglite(client, { schema }) as unknown as DrizzleHandle,
    withReservedConnection: (work) =>
      work({
        query: async (text, params = []) => (await client.query<Record<string, unknown>>(text, params)).rows,
      }),
    async ping() {
      try {
        await client.query('select 1');
      } catch (error) {
        throw new DatabaseError('DB_UNAVAILABLE', 'embedded database (PGlite) did not answer', {
          cause: error,
        });
      }
    },
    end: () => client.close(),
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

/** host:port/database, without user or password, for messages. */
export function describeTarget(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.hostname}${parsed.port ? `:${parsed.port}` : ''}${parsed.pathname}`;
  } catch {
    return '(unparseable DATABASE_URL)';
  }
}

function reasonOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
