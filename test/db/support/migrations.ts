import { readFileSync } from 'node:fs';

/** The tags drizzle-kit wrote in the journal, in order: what a fresh database must end up with. */
export const MIGRATION_TAGS: readonly string[] = (
  JSON.parse(readFileSync(new URL('../../../drizzle/meta/_journal.json', import.meta.url), 'utf8')) as {
    entries: { tag: string }[];
  }
).entries.map((entry) => entry.tag);
