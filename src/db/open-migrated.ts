import { type Database, type OpenDatabaseOptions, openDatabase } from './database.js';
import { DatabaseError } from './errors.js';
import { type MigrationResult, migrate } from './migrate.js';
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
 * What `run`, `once` and `migrate` do on start: open the database and bring its schema up to date. A
 * database that cannot be migrated is closed again, so a failed start leaves no pool behind. A worker
 * started before its database (a deploy, a failover) waits for it instead of exiting.
 */
export function openMigratedDatabase(
  options: OpenDatabaseOptions = {},
  wait: OpenWait = { waitMs: 0 },
): Promise<{ database: Database; migration: MigrationResult }> {
  if (!options.url) return openAndMigrate(options);
  return retryWhileUnreachable(() => boundedAttempt(options, wait.attemptTimeoutMs ?? 15_000), wait);
}

function boundedAttempt(options: OpenDatabaseOptions, timeoutMs: number) {
  const attempt = openAndMigrate(options);
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

async function openAndMigrate(options: OpenDatabaseOptions) {
  const database = await openDatabase(options);
  try {
    return { database, migration: await migrate(database) };
  } catch (error) {
    await database.close();
    throw error;
  }
}
