/**
 * A fresh, migrated database per test file (or an empty one, for migration tests). On PostgreSQL: a new database cloned from the run's migrated
 * template (see global-setup.ts), dropped by drop(). On PGlite: a new in-memory instance loaded from a
 * migrated snapshot, because initdb plus migrations cost seconds per instance while loading a snapshot
 * costs half a second. The snapshot is cached in the temp directory under a name derived from the
 * migration files and the PGlite version, so a changed migration can never be served stale.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { readdir, readFile, rename, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import postgres from 'postgres';
import { inject } from 'vitest';
import { createDatabase } from '../../src/db/database.js';
import {
  type Database,
  findMigrationsFolder,
  migrate,
  type NotificationRouter,
  openDatabase,
  openMigratedDatabase,
} from '../../src/db/index.js';
import { wrapPglite } from '../../src/db/pglite-connection.js';
import { type TestBackend, withDatabase } from './global-setup.js';

export type { TestBackend };

export interface TestDatabase {
  database: Database;
  /** Connection string of this test database (postgres only), e.g. to open a second pool on it. */
  url?: string;
  backend: TestBackend;
  drop(): Promise<void>;
}

/** The backends this run can test: PostgreSQL when the server answered, and PGlite always. */
export function testBackends(): TestBackend[] {
  return inject('treasuryDatabase').backend === 'postgres' ? ['postgres', 'pglite'] : ['pglite'];
}

export async function createTestDatabase(
  backend: TestBackend = inject('treasuryDatabase').backend,
  options: {
    clock?: () => Date;
    maxConnections?: number;
    empty?: boolean;
    routeNotifications?: NotificationRouter;
  } = {},
): Promise<TestDatabase> {
  if (backend === 'pglite') {
    const client = options.empty
      ? await PGlite.create()
      : await PGlite.create({ loadDataDir: await migratedPgliteSnapshot() });
    const database = createDatabase(
      wrapPglite(client),
      options.clock ?? (() => new Date()),
      options.routeNotifications,
    );
    return { database, backend, drop: () => database.close() };
  }
  const { adminUrl, templateDatabase } = inject('treasuryDatabase');
  if (!adminUrl || !templateDatabase) throw new Error('PostgreSQL was not prepared by global-setup');
  const name = `tb_test_${process.pid}_${randomBytes(4).toString('hex')}`;
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  try {
    if (options.empty) await admin.unsafe(`create database "${name}"`);
    else await cloneTemplate(admin, name, templateDatabase);
  } catch (error) {
    await admin.end({ timeout: 1 });
    throw error;
  }
  const url = withDatabase(adminUrl, name);
  const database = await openDatabase({
    url,
    maxConnections: options.maxConnections ?? 5,
    clock: options.clock,
    routeNotifications: options.routeNotifications,
  });
  return {
    database,
    url,
    backend,
    async drop() {
      await database.close();
      await admin.unsafe(`drop database if exists "${name}" with (force)`);
      await admin.end({ timeout: 1 });
    },
  };
}

/** The database that commands run as child processes use, and the test's way to look into it. */
export interface CommandDatabase {
  /** Runs `work` on the database as the commands see it. */
  use<T>(work: (database: Database) => Promise<T>): Promise<T>;
  drop(): Promise<void>;
}

/**
 * With PostgreSQL a test database of its own, named to the commands by `DATABASE_URL` (set in `env`);
 * otherwise the embedded database in `env.TREASURY_DATA_DIR`, which one process at a time opens, so each
 * look opens and closes it.
 */
export async function createCommandDatabase(env: Record<string, string>): Promise<CommandDatabase> {
  const test = await createTestDatabase();
  if (!test.url) {
    await test.drop();
    return {
      async use(work) {
        const { database } = await openMigratedDatabase({ dataDir: env.TREASURY_DATA_DIR });
        try {
          return await work(database);
        } finally {
          await database.close();
        }
      },
      drop: async () => {},
    };
  }
  env.DATABASE_URL = test.url;
  return { use: (work) => work(test.database), drop: () => test.drop() };
}

/**
 * PostgreSQL refuses to clone a template while another CREATE DATABASE reads it ("source database is
 * being accessed by other users", 55006); test files start together, so that case is retried.
 */
async function cloneTemplate(admin: postgres.Sql, name: string, template: string): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await admin.unsafe(`create database "${name}" template "${template}"`);
      return;
    } catch (error) {
      if ((error as { code?: string }).code !== '55006' || attempt >= 50) throw error;
      await new Promise((resolve) => setTimeout(resolve, 20 + Math.random() * 80));
    }
  }
}

let snapshot: Promise<Blob> | undefined;

function migratedPgliteSnapshot(): Promise<Blob> {
  snapshot ??= loadOrBuildSnapshot();
  return snapshot;
}

async function loadOrBuildSnapshot(): Promise<Blob> {
  const directory = join(tmpdir(), 'treasury-bot-test');
  mkdirSync(directory, { recursive: true });
  const file = join(directory, `pglite-${await snapshotKey()}.tar`);
  try {
    return new Blob([await readFile(file)]);
  } catch {
    const client = await PGlite.create();
    const database = createDatabase(wrapPglite(client), () => new Date());
    await migrate(database);
    const dump = await client.dumpDataDir('none');
    await database.close();
    // Written aside and renamed, so a concurrent reader never sees half a file.
    const partial = `${file}.${process.pid}.${randomBytes(4).toString('hex')}`;
    await writeFile(partial, new Uint8Array(await dump.arrayBuffer()));
    await rename(partial, file);
    return dump;
  }
}

async function snapshotKey(): Promise<string> {
  const folder = findMigrationsFolder();
  const hash = createHash('sha256');
  // The package does not export its package.json; it sits one level above the resolved entry file.
  const pgliteEntry = createRequire(import.meta.url).resolve('@electric-sql/pglite');
  hash.update(await readFile(join(dirname(pgliteEntry), '..', 'package.json')));
  for (const name of (await readdir(folder, { recursive: true })).sort()) {
    if (name.endsWith('.sql') || name.endsWith('_journal.json'))
      hash.update(name).update(await readFile(join(folder, name)));
  }
  return hash.digest('hex').slice(0, 16);
}
