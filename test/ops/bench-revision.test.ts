import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { describeRevision } from '../../bench/harness/machine.js';

const folders: string[] = [];
afterAll(() => {
  for (const folder of folders) rmSync(folder, { recursive: true, force: true });
});

function folder(): string {
  const path = mkdtempSync(join(tmpdir(), 'bench-revision-'));
  folders.push(path);
  return path;
}

const git = (cwd: string, ...args: string[]) =>
  execFileSync('git', ['-c', 'user.name=bench', '-c', 'user.email=bench@example.com', ...args], {
    cwd,
    encoding: 'utf8',
  }).trim();

/** bench/results.json names the code it measured, so a figure is never read against another commit. */
describe('the revision written with the bench results', () => {
  it('is the commit checked out, and dirty while the tree differs from it', () => {
    const repository = folder();
    git(repository, 'init', '-q');
    writeFileSync(join(repository, 'a.ts'), 'export const a = 1;\n');
    git(repository, 'add', 'a.ts');
    git(repository, 'commit', '-qm', 'first');
    const head = git(repository, 'rev-parse', 'HEAD');
    expect(describeRevision(repository)).toEqual({ commit: head, dirty: false });
    writeFileSync(join(repository, 'a.ts'), 'export const a = 2;\n');
    expect(describeRevision(repository)).toEqual({ commit: head, dirty: true });
  });

  it('is null outside a git checkout, rather than a commit it cannot know', () => {
    expect(describeRevision(folder())).toEqual({ commit: null, dirty: null });
  });
});
