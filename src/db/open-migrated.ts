import { type Database, type OpenDatabaseOptions, openDatabase } from './database.js';
import { DatabaseError } from './errors.js';
import { type MigrateOptions, type MigrationResult, migrate, requireCurrentSchema } from './migrate.js';
import { retryWhileUnreachable, type StartupWait } from './retry-while-unreachable.js';

export interface OpenWait extends StartupWait {
  /**
   * Bound of one attempt on a server. A server (or proxy) that accepts connections and drops them makes the
   * driver retry without end; the attempt is abandoned and counted as unreachable instead. Embedded PGlite
   * has no connection to lose: its first open and migration only take longer on a slow or busy machine
   * (over 15 s in CI's Node 24 pass), and bounding it would fail a start that was making progress.
   */
  attemptTimeoutMs?: number;
}

/**
 * What a command does with the schema on start:
 * - `apply`: bring it up to date (`treasury-bot migrate`, run by the owner role), with the worker role's
 *   grants when `grantTo` names it;
 * - `check`: on a server, read the version without DDL and refuse a database behind this version
 *   (DB_SCHEMA_BEHIND); the embedded database is migrated all the same, since the one process that opens it
 *   owns it (`npm start` needs no setup).
 */
export type SchemaStep = { step: 'apply'; grantTo?: string } | { step: 'check' };

/**
 * Opens the database and takes the schema step. A database that fails it is closed again, so a failed start
 * leaves no pool behind. A worker started before its database (a deploy, a failover) waits for it instead of
 * exiting.
 */
export function openMigratedDatabase(
  options: OpenDatabaseOptions = {},
  wait: OpenWait = { waitMs: 0 },
  schema: SchemaStep = { step: 'apply' },
): Promise<{ database: Database; migration: MigrationResult }> {
  if (!options.url) return openAndMigrate(options, schema);
  return retryWhileUnreachable(() => boundedAttempt(options, schema, wait.attemptTimeoutMs ?? 15_000), wait);
}

function boundedAttempt(options: OpenDatabaseOptions, schema: SchemaStep, timeoutMs: number) {
  const attempt = openAndMigrate(options, schema);
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => {
      // Whatever the abandoned attempt opens later is closed, so no pool is left behind.
      attempt.then(({ database }) => database.close()).catch(() => {});
      reject(new DatabaseError('DB_UNAVAILABLE', `the database did not answer within ${timeoutMs} ms`));
    }, timeoutMs);
  });
  return Promise.race([attempt, expired]).finally(() => clearTimeout(timer));
}

async function openAndMigrate(options: OpenDatabaseOptions, schema: SchemaStep) {
  const database = await openDatabase(options);
  try {
    if (schema.step === 'check' && database.kind === 'postgres') {
      // An unreachable server is DB_UNAVAILABLE (waited for), not a schema to refuse.
      await database.ping();
      await requireCurrentSchema(database);
      return { database, migration: { applied: [] } };
    }
    const migrateOptions: MigrateOptions = schema.step === 'apply' ? { grantTo: schema.grantTo } : {};
    return { database, migration: await migrate(database, migrateOptions) };
  } catch (error) {
    await database.close();
    throw error;
  }
}
