/**
 * The embedded driver: PGlite (PostgreSQL in WebAssembly, one session) in this process. Imported only
 * when no DATABASE_URL is set, so a worker on a PostgreSQL server never loads it.
 */
import { mkdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { PGlite, type Transaction } from '@electric-sql/pglite';
import { drizzle as drizzlePglite } from 'drizzle-orm/pglite';
import { type Connection, reasonOf } from './connection.js';
import { DatabaseError } from './errors.js';
import * as schema from './schema.js';
import { lendingClient, statementTransactions } from './statement-transactions.js';

export async function connectPglite(options: { dataDir?: string; memory?: boolean }): Promise<Connection> {
  let location = 'memory';
  let client: PGlite;
  try {
    if (options.memory) {
      client = await PGlite.create();
    } else {
      const directory = join(resolve(options.dataDir ?? './data'), 'pglite');
      location = directory;
      // The ledger and the console's password hashes: readable by the worker's user alone, whatever the umask.
      await mkdir(directory, { recursive: true, mode: 0o700 });
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
    drizzle: drizzlePglite(client, { schema }),
    withReservedConnection: (work) =>
      work({
        query: async (text, params = []) => (await client.query<Record<string, unknown>>(text, params)).rows,
      }),
    statementTransactions: (build) =>
      statementTransactions(
        {
          begin: <T>(work: (tx: Transaction) => Promise<T>) => client.transaction(work),
          // Every statement drizzle sends goes through `query`.
          handle: (lent) => drizzlePglite(lendingClient(client, lent, 'query', ['transaction']), { schema }),
        },
        build,
      ),
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
