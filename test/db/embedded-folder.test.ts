import { mkdtemp, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openMigratedDatabase } from '../../src/db/index.js';

/** The embedded database holds the ledger and the console's password hashes: only its owner reads it. */
describe('the embedded database folder', () => {
  it('is created readable by its owner alone (0700), whatever the umask', async () => {
    const dataDir = join(await mkdtemp(join(tmpdir(), 'tb-folder-')), 'data');
    const { database } = await openMigratedDatabase({ dataDir });
    await database.close();
    for (const folder of [dataDir, join(dataDir, 'pglite')]) {
      expect(((await stat(folder)).mode & 0o777).toString(8), folder).toBe('700');
    }
  }, 60_000);
});
