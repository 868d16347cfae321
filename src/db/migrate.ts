/**
 * Applies the SQL migrations drizzle-kit generated under drizzle/. drizzle-orm's own migrator reads the
 * last applied migration outside its transaction and creates its bookkeeping schema unguarded, so two
 * replicas starting together can both apply the same file. Here everything happens in one transaction that
 * first takes a transaction-scoped advisory lock: the second replica waits, then sees the work of the first
 * and applies nothing. The bookkeeping table is drizzle's (`drizzle.__drizzle_migrations`, same hash and
 * `created_at`), so drizzle-kit's tools keep understanding the database.
 *
 * Only `treasury-bot migrate` (and the embedded database, which one process owns) applies migrations; on a
 * server every other command runs as a role without DDL rights and only checks the version
 * (requireCurrentSchema), so the role that can alter tables and triggers is never the one that runs.
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sql } from 'drizzle-orm';
import { bigint, pgSchema, serial, text } from 'drizzle-orm/pg-core';
import { connectionOf, type Database } from './database.js';
import { DatabaseError, sqlStateOf } from './errors.js';
import { grantWorkerRights } from './grants.js';

/** Arbitrary constant shared by every replica: "treasury-bot migrations". */
const MIGRATION_LOCK_KEY = 7_304_116_215_388_001n;

const appliedMigrations = pgSchema('drizzle').table('__drizzle_migrations', {
  id: serial('id').primaryKey(),
  hash: text('hash').notNull(),
  createdAt: bigint('created_at', { mode: 'number' }),
});

interface JournalEntry {
  tag: string;
  when: number;
}

interface Migration extends JournalEntry {
  statements: string[];
  hash: string;
}

export interface MigrationResult {
  /** Tags of the migrations this call applied, in order; empty when the database was already current. */
  applied: string[];
}

export interface MigrateOptions {
  folder?: string;
  /** The worker role given its rights (src/db/grants.ts) in the same transaction, after the migrations. */
  grantTo?: string;
}

export async function migrate(database: Database, options: MigrateOptions = {}): Promise<MigrationResult> {
  const folder = options.folder ?? findMigrationsFolder();
  const migrations = await readMigrations(folder);
  const { drizzle } = connectionOf(database);
  // An unreachable server is DB_UNAVAILABLE, not a failed migration.
  await database.ping();
  let current = '(bookkeeping)';
  try {
    return await drizzle.transaction(async (tx) => {
      await tx.execute(sql.raw(`select pg_advisory_xact_lock(${MIGRATION_LOCK_KEY})`));
      await tx.execute(sql`create schema if not exists drizzle`);
      await tx.execute(
        sql`create table if not exists drizzle.__drizzle_migrations (id serial primary key, hash text not null, created_at bigint)`,
      );
      const done = new Map(
        (await tx.select().from(appliedMigrations)).map((row) => [Number(row.createdAt), row.hash]),
      );
      const applied: string[] = [];
      for (const migration of migrations) {
        current = migration.tag;
        const doneHash = done.get(migration.when);
        if (doneHash !== undefined) {
          if (doneHash !== migration.hash) {
            throw new DatabaseError(
              'DB_MIGRATION_FAILED',
              `migration ${migration.tag} was changed after it was applied; add a new migration instead`,
            );
          }
          continue;
        }
        for (const statement of migration.statements) await tx.execute(sql.raw(statement));
        await tx.insert(appliedMigrations).values({ hash: migration.hash, createdAt: migration.when });
        applied.push(migration.tag);
      }
      if (options.grantTo !== undefined) {
        current = `(grants to ${options.grantTo})`;
        await grantWorkerRights(tx, options.grantTo);
      }
      return { applied };
    });
  } catch (error) {
    if (error instanceof DatabaseError) throw error;
    throw new DatabaseError('DB_MIGRATION_FAILED', `migration ${current} failed: ${messageOf(error)}`, {
      cause: error,
    });
  }
}

/**
 * The migrations this code needs that the database lacks (tags, in order), for readiness: a replica started
 * against a database another version rolled back, or restored from an older backup, must not report ready.
 */
export async function pendingMigrations(
  database: Database,
  options: { folder?: string } = {},
): Promise<string[]> {
  const migrations = await readMigrations(options.folder ?? findMigrationsFolder());
  const { drizzle } = connectionOf(database);
  let applied: { createdAt: number | null }[];
  try {
    applied = await drizzle.select({ createdAt: appliedMigrations.createdAt }).from(appliedMigrations);
  } catch (error) {
    // No bookkeeping table (42P01): nothing was ever applied. Anything else is the caller's to report.
    if (sqlStateOf(error) === '42P01') return migrations.map((migration) => migration.tag);
    throw error;
  }
  const done = new Set(applied.map((row) => Number(row.createdAt)));
  return migrations.filter((migration) => !done.has(migration.when)).map((migration) => migration.tag);
}

/**
 * What every command but `migrate` does on a server: read the version, change nothing. A database behind this
 * version is refused with what to do; one whose bookkeeping the role cannot read, with the grant it lacks.
 */
export async function requireCurrentSchema(database: Database): Promise<void> {
  let pending: string[];
  try {
    pending = await pendingMigrations(database);
  } catch (error) {
    if (sqlStateOf(error) !== '42501') throw error;
    throw new DatabaseError(
      'DB_SCHEMA_BEHIND',
      "this role cannot read the schema version (drizzle.__drizzle_migrations): give it the worker's rights with `treasury-bot migrate --grant-to ROLE` as the database's owner role",
      { cause: error },
    );
  }
  if (pending.length === 0) return;
  const lacking =
    pending.length === 1
      ? `migration ${pending[0]}`
      : `${pending.length} migrations (${pending[0]} to ${pending.at(-1)})`;
  throw new DatabaseError(
    'DB_SCHEMA_BEHIND',
    `the database lacks ${lacking} that this version needs: run \`treasury-bot migrate\` as the database's owner role`,
  );
}

async function readMigrations(folder: string): Promise<Migration[]> {
  const journalPath = join(folder, 'meta', '_journal.json');
  let entries: JournalEntry[];
  try {
    entries = (JSON.parse(await readFile(journalPath, 'utf8')) as { entries: JournalEntry[] }).entries;
  } catch (error) {
    throw new DatabaseError('DB_MIGRATION_FAILED', `cannot read migration journal ${journalPath}`, {
      cause: error,
    });
  }
  return Promise.all(
    entries.map(async (entry) => {
      const file = join(folder, `${entry.tag}.sql`);
      let text: string;
      try {
        text = await readFile(file, 'utf8');
      } catch (error) {
        throw new DatabaseError('DB_MIGRATION_FAILED', `cannot read migration ${file}`, { cause: error });
      }
      return {
        tag: entry.tag,
        when: entry.when,
        hash: createHash('sha256').update(text).digest('hex'),
        statements: text.split('--> statement-breakpoint').filter((statement) => statement.trim() !== ''),
      };
    }),
  );
}

/** drizzle/ sits at the package root, two levels above src/db and three above dist/src/db. */
export function findMigrationsFolder(): string {
  let directory = dirname(fileURLToPath(import.meta.url));
  for (let level = 0; level < 6; level++) {
    const candidate = join(directory, 'drizzle');
    if (existsSync(join(candidate, 'meta', '_journal.json'))) return candidate;
    directory = dirname(directory);
  }
  throw new DatabaseError(
    'DB_MIGRATION_FAILED',
    'no drizzle/meta/_journal.json found above the program files',
  );
}

function messageOf(error: unknown): string {
  const cause = (error as { cause?: unknown }).cause;
  const inner = cause instanceof Error ? cause : error;
  return inner instanceof Error ? inner.message : String(inner);
}
