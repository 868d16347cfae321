/**
 * Database commands: `migrate` brings the schema up to date (PostgreSQL when DATABASE_URL is set,
 * otherwise the embedded database under TREASURY_DATA_DIR). `run` and `once` do the same on start.
 */
import type { Command } from 'commander';
import { openDatabaseFromSettings } from '../app.js';
import { loadSettings } from '../config/index.js';
import { describeTarget } from '../db/index.js';
import { printErrorLine, printJson, printLines } from './api-output.js';

export function registerDbCommands(program: Command): void {
  program
    .command('migrate')
    .description('apply database migrations (also done by run and once on start)')
    .option('--json', 'print one JSON document on stdout')
    .action((flags: { json?: boolean }) => runMigrate(flags));
}

async function runMigrate(flags: { json?: boolean }): Promise<void> {
  // The connection string may carry a password: it is treated as a secret in every line printed.
  let secrets: string[] = [];
  try {
    const settings = loadSettings({ env: process.env });
    const { url, dataDir } = settings.database;
    secrets = url ? [url, ...passwordOf(url)] : [];
    const { database, migration } = await openDatabaseFromSettings(settings, { maxConnections: 1 });
    await database.close();
    const target = url ? `${describeTarget(url)} (PostgreSQL)` : `${dataDir} (embedded PGlite)`;
    if (flags.json) {
      printJson({ backend: database.kind, applied: migration.applied }, secrets);
    } else {
      printLines(
        [
          migration.applied.length === 0
            ? `database ${target} is up to date`
            : `database ${target}: applied ${migration.applied.join(', ')}`,
        ],
        secrets,
      );
    }
  } catch (error) {
    printErrorLine(error, secrets);
    process.exitCode = 1;
  }
}

function passwordOf(url: string): string[] {
  try {
    const password = new URL(url).password;
    return password ? [password, decodeURIComponent(password)] : [];
  } catch {
    return [];
  }
}
