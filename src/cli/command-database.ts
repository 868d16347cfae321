import type { Database } from '../db/index.js';

/**
 * How a command reaches the database: the settings (file, then environment), the database they name opened
 * as the application opens it (a server's schema checked without DDL, refused when behind this version; the
 * embedded one migrated), and closed once `work` ends. Imported on use, so that help and argument errors
 * never load the application.
 */
export async function withCommandDatabase<T>(
  work: (database: Database) => Promise<T>,
  { maxConnections = 2 }: { maxConnections?: number } = {},
): Promise<T> {
  const { openDatabaseFromSettings } = await import('../app.js');
  const { loadSettings } = await import('../config/index.js');
  const { database } = await openDatabaseFromSettings(loadSettings({ env: process.env }), {
    maxConnections,
  });
  try {
    return await work(database);
  } finally {
    await database.close();
  }
}
