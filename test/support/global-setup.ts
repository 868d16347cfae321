/**
 * Runs once before the suite. Database-backed tests prefer a real PostgreSQL server; when none answers,
 * they fall back to embedded PGlite, and this says so loudly so nobody mistakes that run for full coverage.
 *
 * With PostgreSQL, a migrated template database is built here once per run; each test file then gets its
 * own database cloned from it (test/support/database.ts), which takes milliseconds instead of a migration.
 * The template's name is unique per run because several runs may share one server.
 */
import { randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import postgres from 'postgres';
import type { TestProject } from 'vitest/node';
import { transpileForNode } from '../../bench/harness/transpile.js';
import { migrate, openDatabase } from '../../src/db/index.js';

export const DEFAULT_TEST_DATABASE_URL = 'postgres://root@127.0.0.1:5432/postgres';

export type TestBackend = 'postgres' | 'pglite';

export interface TestDatabaseContext {
  backend: TestBackend;
  /** Server-level connection string (maintenance database) when the backend is postgres. */
  adminUrl?: string;
  /** Migrated template database to clone, when the backend is postgres. */
  templateDatabase?: string;
}

declare module 'vitest' {
  export interface ProvidedContext {
    treasuryDatabase: TestDatabaseContext;
    /** Path of the transpiled `src/cli.js` that child-process tests run with plain node. */
    treasuryCli: string;
  }
}

export default async function setup(project: TestProject): Promise<(() => Promise<void>) | undefined> {
  const cli = await transpileForNode('src/cli.ts', `treasury-test-${process.pid}`);
  project.provide('treasuryCli', cli);
  const removeCli = () => rm(new URL('..', `file://${cli}`).pathname, { recursive: true, force: true });
  if (process.env.TREASURY_TEST_DB === 'pglite') {
    announcePglite('TREASURY_TEST_DB=pglite was set');
    project.provide('treasuryDatabase', { backend: 'pglite' });
    return removeCli;
  }
  const adminUrl = process.env.TEST_DATABASE_URL ?? DEFAULT_TEST_DATABASE_URL;
  const admin = postgres(adminUrl, { max: 1, connect_timeout: 3, onnotice: () => {} });
  try {
    await admin`select 1`;
  } catch (error) {
    await admin.end({ timeout: 1 });
    announcePglite(`no PostgreSQL server answered at ${adminUrl} (${(error as Error).message})`);
    project.provide('treasuryDatabase', { backend: 'pglite' });
    return removeCli;
  }

  const templateDatabase = `tb_template_${process.pid}_${randomBytes(4).toString('hex')}`;
  try {
    await admin.unsafe(`create database "${templateDatabase}"`);
    const template = await openDatabase({ url: withDatabase(adminUrl, templateDatabase), maxConnections: 1 });
    try {
      await migrate(template);
    } finally {
      // Cloning refuses a template that still has a session open.
      await template.close();
    }
  } catch (error) {
    await admin.unsafe(`drop database if exists "${templateDatabase}" with (force)`);
    await admin.end({ timeout: 1 });
    throw error;
  }
  project.provide('treasuryDatabase', { backend: 'postgres', adminUrl, templateDatabase });

  return async () => {
    await removeCli();
    await admin.unsafe(`drop database if exists "${templateDatabase}" with (force)`);
    await admin.end({ timeout: 5 });
  };
}

export function withDatabase(url: string, database: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${database}`;
  return parsed.toString();
}

function announcePglite(why: string): void {
  const bar = '!'.repeat(78);
  process.stderr.write(
    `\n${bar}\n!!  DATABASE TESTS ARE RUNNING ON EMBEDDED PGLITE, NOT ON A POSTGRESQL SERVER\n!!  ${why}\n!!  Start PostgreSQL (see README) to run them against the real server as CI does.\n${bar}\n\n`,
  );
}
