import { execFile } from 'node:child_process';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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

  it("prints a target's total and window in its own zone, and its problems at file:line:col", async () => {
    const folder = await mkdtemp(join(tmpdir(), 'validate-target-'));
    const file = join(folder, 'payables.yaml');
    await writeFile(
      file,
      [
        'name: december-payables',
        'kind: target',
        'symbol: USDTBRL',
        'target: { spend: "2000000.00" }',
        'window: { start: "2026-12-01T09:00", end: "2026-12-05T17:00" }',
        'every: "*/10 9-17 * * 1-5"',
        'slice: { min: "5000.00", max: "60000.00" }',
        'timezone: America/Sao_Paulo',
        '',
      ].join('\n'),
    );
    const valid = await runValidate([file]);
    expect(valid.code).toBe(0);
    expect(valid.stdout).toContain(
      'december-payables: target USDTBRL spend "2000000.00" from 2026-12-01T09:00 to 2026-12-05T17:00 every "*/10 9-17 * * 1-5" America/Sao_Paulo',
    );
    await writeFile(file, (await readFile(file, 'utf8')).replace('max: "60000.00"', 'max: "50.00"'));
    const invalid = await runValidate([file]);
    expect(invalid.code).toBe(1);
    expect(invalid.stderr).toContain(`${file}:7:15: slice.min: "5000.00" is above slice.max "50.00"`);
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

  it("checks each strategy's account against the settings' accounts", async () => {
    const folder = await mkdtemp(join(tmpdir(), 'tb-validate-accounts-'));
    await writeFile(join(folder, 'settings.yaml'), `${TWO_ACCOUNTS}`);
    await writeFile(
      join(folder, 'strategies.yaml'),
      `${dca('north-dca', 'account: northco\n')}---\n${dca('nameless', '')}---\n${dca('west-dca', 'account: westco\n')}`,
    );
    const bad = await runValidate([join(folder, 'strategies.yaml')], {
      TREASURY_CONFIG: join(folder, 'settings.yaml'),
    });
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain(
      'account: required: this deployment has several accounts (northco, southco)',
    );
    expect(bad.stderr).toContain('account: unknown account "westco" (the settings have northco, southco)');

    await writeFile(join(folder, 'good.yaml'), dca('south-dca', 'account: southco\n'));
    const good = await runValidate([join(folder, 'good.yaml'), '--json'], {
      TREASURY_CONFIG: join(folder, 'settings.yaml'),
    });
    expect(JSON.parse(good.stdout)).toEqual({ valid: true, strategies: ['south-dca'], problems: [] });
    expect(good.code).toBe(0);
  });

  it('shows settings that mix accounts: with the single api: block as an error naming where', async () => {
    const folder = await mkdtemp(join(tmpdir(), 'tb-validate-mixed-'));
    const settings = join(folder, 'settings.yaml');
    await writeFile(settings, `api:\n  url: https://otc.example.com\n${TWO_ACCOUNTS}`);
    const human = await runValidate(['strategies/weekday-dca.yaml'], { TREASURY_CONFIG: settings });
    expect(human.code).toBe(1);
    expect(human.stdout).toBe('');
    expect(human.stderr).toContain(`${settings}:2:8: api.url: cannot be set together with accounts:`);
    expect(human.stderr).toContain(
      "invalid settings: 1 problem; the strategies' accounts are checked once the settings are valid\n",
    );
    expect(human.stderr).toContain('strategies: 1 strategy in 1 file, valid on their own\n');

    const json = await runValidate(['strategies/weekday-dca.yaml', '--json'], {
      TREASURY_CONFIG: settings,
      TREASURY_API_TOKEN: 'a-token-from-the-environment',
    });
    expect(json.code).toBe(1);
    const report = JSON.parse(json.stdout) as { problems: { file: string; line: number; key: string }[] };
    expect(report.problems.map(({ file, line, key }) => ({ file, line, key }))).toEqual([
      { file: settings, line: 2, key: 'api.url' },
      { file: 'env TREASURY_API_TOKEN', line: null, key: 'api.token' },
    ]);
    expect(json.stdout).not.toContain('a-token-from-the-environment');
  });
});

const TWO_ACCOUNTS = `accounts:
  - name: northco
    api: { url: "https://north.example.com", token: north-token }
  - name: southco
    api: { url: "https://south.example.com", token: south-token }
`;

function dca(name: string, account: string): string {
  return `name: ${name}\n${account}kind: dca\nsymbol: USDTBRL\namount: "100.00"\nschedule: "0 10 * * *"\n`;
}
