import type { Settings } from '../config/index.js';
import type { Database } from '../db/index.js';

/**
 * How a command reaches the database: the settings (file, then environment), the database they name opened
 * as the application opens it (a server's schema checked without DDL, refused when behind this version; the
 * embedded one migrated), and closed once `work` ends; `work` gets the settings too (the accounts that
 * `--account` names). Imported on use, so that help and argument errors never load the application.
 */
export async function withCommandDatabase<T>(
  work: (database: Database, settings: Settings) => Promise<T>,
  { maxConnections = 2 }: { maxConnections?: number } = {},
): Promise<T> {
  const { openDatabaseFromSettings } = await import('../app.js');
  const { loadSettings } = await import('../config/index.js');
  const settings = loadSettings({ env: process.env });
  const { database } = await openDatabaseFromSettings(settings, { maxConnections });
  try {
    return await work(database, settings);
  } finally {
    await database.close();
  }
}
