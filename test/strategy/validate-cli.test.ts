import { execFile } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { cliInvocation } from '../support/cli.js';

/** The validate command as operators and scripts run it: a child process, judged by exit code and output. */

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function runValidate(args: string[], env: NodeJS.ProcessEnv = {}): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      ...cliInvocation(['validate', ...args]),
      { env: { ...process.env, ...env }, timeout: 30_000 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : -1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

const BAD = 'test/fixtures/strategies/bad/bad-values.yaml';

describe.concurrent('treasury-bot validate', () => {
  it('exits 0 with --json for the shipped example strategies', async () => {
    const run = await runValidate(['strategies', '--json']);
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual({
      valid: true,
      strategies: ['demo-dca', 'demo-dip-buyer', 'weekday-dca'],
      problems: [],
    });
  });

  it('exits 1 with --json, one problem object per problem, nothing else on stdout', async () => {
    const run = await runValidate([BAD, '--json']);
    expect(run.code).toBe(1);
    const document = JSON.parse(run.stdout);
    expect(document.valid).toBe(false);
    expect(document.strategies).toEqual([]);
    expect(document.problems).toHaveLength(5);
    expect(document.problems[0]).toEqual({
      file: BAD,
      line: 6,
      col: 7,
      key: 'name',
      message:
        'name: must be lowercase letters, digits and single hyphens, at most 64 characters (got "Weekday DCA")',
    });
  });

  it('exits 1 and prints each problem as file:line:col: message on stderr', async () => {
    const run = await runValidate(['test/fixtures/strategies/mixed']);
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr).toContain(
      'test/fixtures/strategies/mixed/bad.yml:4:9: amount: must be greater than 0 (got "-100.00")\n' +
        'invalid: 1 problem in 2 files; nothing was loaded\n',
    );
  });

  it('reads TREASURY_STRATEGIES when no path is given and prints a summary', async () => {
    const run = await runValidate([], { TREASURY_STRATEGIES: 'test/fixtures/strategies/valid' });
    expect(run.code).toBe(0);
    expect(run.stdout).toBe(
      'valid: 2 strategies in 1 file\n' +
        '  full-dca: dca USDTBRL "0 10 * * 1-5" America/Sao_Paulo (disabled, dry run)\n' +
        '  minimal-threshold: threshold USDTBRL "*/15 * * * * *" UTC\n',
    );
  });
  it('checks the worker settings too, naming the variable and the value', async () => {
    const run = await runValidate(['strategies', '--json'], { TREASURY_HTTP_PORT: 'eighty' });
    expect(run.code).toBe(1);
    const report = JSON.parse(run.stdout) as {
      valid: boolean;
      problems: { file: string; key: string; message: string }[];
    };
    expect(report.valid).toBe(false);
    expect(report.problems).toEqual([
      expect.objectContaining({ file: 'env TREASURY_HTTP_PORT', key: 'http.port' }),
    ]);
    expect(report.problems[0]?.message).toContain('(got "eighty")');
  });
});
