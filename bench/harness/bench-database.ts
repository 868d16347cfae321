/**
 * A fresh PostgreSQL database for one bench or fault run, migrated, and dropped afterwards. The server is
 * DATABASE_URL's when set, else the local one; the run never writes into an existing database, so a
 * benchmark cannot pollute (or be skewed by) someone's data.
 */
import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import { migrate, openDatabase } from '../../src/db/index.js';

export const LOCAL_SERVER_URL = 'postgres://root@127.0.0.1:5432/postgres';

export interface BenchDatabase {
  /** Connection string of the fresh database. */
  url: string;
  name: string;
  /** Server-level connection for administration (pg_terminate_backend, statistics). */
  admin: postgres.Sql;
  serverVersion: string;
  /** Drops the database, terminating any session still on it; idempotent. */
  drop(): Promise<void>;
}

export class NoPostgresServerError extends Error {
  override readonly name = 'NoPostgresServerError';
  readonly code = 'NO_POSTGRES_SERVER';
}

export function serverUrl(): string {
  return process.env.DATABASE_URL ?? LOCAL_SERVER_URL;
}

export async function createBenchDatabase(prefix: string, adminUrl = serverUrl()): Promise<BenchDatabase> {
  const admin = postgres(adminUrl, { max: 2, connect_timeout: 3, onnotice: () => {} });
  let serverVersion: string;
  try {
    const [row] = await admin<{ server_version: string }[]>`show server_version`;
    serverVersion = row!.server_version;
  } catch (error) {
    await admin.end({ timeout: 1 });
    throw new NoPostgresServerError(`no PostgreSQL server answered at ${describe(adminUrl)}`, {
      cause: error,
    });
  }
  const name = `${prefix}_${process.pid}_${randomBytes(4).toString('hex')}`;
  await admin.unsafe(`create database "${name}"`);
  const url = withDatabase(adminUrl, name);
  const database = await openDatabase({ url, maxConnections: 1 });
  try {
    await migrate(database);
  } finally {
    await database.close();
  }
  let dropping: Promise<void> | undefined;
  return {
    url,
    name,
    admin,
    serverVersion,
    drop() {
      dropping ??= (async () => {
        await admin.unsafe(`drop database if exists "${name}" with (force)`);
        await admin.end({ timeout: 5 });
      })();
      return dropping;
    },
  };
}

export function withDatabase(url: string, database: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${database}`;
  return parsed.toString();
}

/** host:port/database without credentials, for messages. */
function describe(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.hostname}:${parsed.port || '5432'}${parsed.pathname}`;
  } catch {
    return '(unparseable DATABASE_URL)';
  }
}
