import { readdirSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '..', '..');

/** docs/architecture.md is the map a newcomer reads first: a folder of src/ missing from it is unexplained. */
describe('docs/architecture.md', () => {
  it('names every folder of src/ in its layers table', () => {
    const table = /## Layers\n([\s\S]*?)\n\n/.exec(
      readFileSync(resolve(ROOT, 'docs/architecture.md'), 'utf8'),
    )?.[1];
    const named = new Set([...(table ?? '').matchAll(/^\| `(src\/[\w-]+\/)`/gm)].map((match) => match[1]));
    const folders = readdirSync(resolve(ROOT, 'src'), { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .map((entry) => `src/${entry.name}/`);
    expect(folders.length).toBeGreaterThan(10);
    expect(folders.filter((folder) => !named.has(folder))).toEqual([]);
  });
});
