import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { unifiedDiff } from '../../src/strategy/index.js';

const folder = mkdtempSync(join(tmpdir(), 'tb-diff-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

const labels = { from: 'old', to: 'new' };

/** What GNU patch makes of `before` with the diff: the diff is right when that is `after`. */
function patched(before: string, diff: string): string {
  const file = join(folder, 'doc.yaml');
  writeFileSync(file, before);
  writeFileSync(join(folder, 'change.diff'), diff);
  execFileSync('patch', ['--silent', '--force', file, join(folder, 'change.diff')]);
  return readFileSync(file, 'utf8');
}

/** GNU diff -u without its two header lines (they carry file names and times). */
function gnuHunks(before: string, after: string): string {
  writeFileSync(join(folder, 'a'), before);
  writeFileSync(join(folder, 'b'), after);
  try {
    execFileSync('diff', ['-u', join(folder, 'a'), join(folder, 'b')], { encoding: 'utf8' });
    return '';
  } catch (error) {
    return String((error as { stdout: string }).stdout)
      .split('\n')
      .slice(2)
      .join('\n');
  }
}

const v1 = `# Weekday buys, owned by finance.
name: weekday-dca
kind: dca
symbol: USDTBRL
amount: "2500.00"
schedule: "0 10 * * 1-5"
timezone: America/Sao_Paulo
maxPrice: "5.90"
budget:
  perDay: "10000"
  perMonth: "150000"
enabled: true
`;

describe('unified diff of strategy documents', () => {
  it('writes the hunks GNU diff -u writes for an edit, an insertion and a removal', () => {
    const cases = [
      v1.replace('amount: "2500.00"', 'amount: "3000.00"'),
      v1.replace('enabled: true\n', 'enabled: true\ndryRun: true\n'),
      v1.replace('budget:\n  perDay: "10000"\n  perMonth: "150000"\n', ''),
      v1.replace('# Weekday buys, owned by finance.\n', '').replace('maxPrice: "5.90"', 'maxPrice: "6.10"'),
    ];
    for (const after of cases) {
      const diff = unifiedDiff(v1, after, labels);
      expect(diff.split('\n').slice(0, 2)).toEqual(['--- old', '+++ new']);
      expect(diff.split('\n').slice(2).join('\n')).toBe(gnuHunks(v1, after));
    }
  });

  it('is empty for the same lines, and a first version is all added lines', () => {
    expect(unifiedDiff(v1, v1, labels)).toBe('');
    const first = unifiedDiff('', v1, { from: '/dev/null', to: 'weekday-dca version 1' });
    expect(first.split('\n')[2]).toBe('@@ -0,0 +1,12 @@');
    expect(patched('', first)).toBe(v1);
  });

  it('turns the old text into the new one under GNU patch, for any edit of the lines', () => {
    const line = fc.constantFrom('a: 1', 'b: 2', 'c: "3"', '# note', '', 'd:', '  e: 5');
    fc.assert(
      fc.property(fc.array(line, { maxLength: 25 }), fc.array(line, { maxLength: 25 }), (a, b) => {
        const before = a.length ? `${a.join('\n')}\n` : '';
        const after = b.length ? `${b.join('\n')}\n` : '';
        const diff = unifiedDiff(before, after, labels);
        expect(diff === '').toBe(before === after);
        if (diff !== '') expect(patched(before, diff)).toBe(after);
      }),
      { numRuns: 60 },
    );
  });
});
